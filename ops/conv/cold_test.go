package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvColdOutput runs channels-last convolutions with a
// residual whose output reaches coldOutput, so that every tile touches
// its output and residual rows before the product writes them, or, where
// the float kernels draw (dispatch.Table.FDraws), draws the next tile's
// while it multiplies, on four images at once and on each alone (an
// output under coldOutput, never touched): 3×3 grouped (tiles of
// gathered rows) and not (float32: tiles of an output row,
// forwardSegments), 1×1 (tiles of the image's rows, forwardTo), float32
// and int8, every table, the same bits.
func TestFusedConvColdOutput(t *testing.T) {
	for _, kg := range [][2]int{{3, 1}, {3, 2}, {1, 1}} {
		testFusedConvColdOutput(t, kg[0], kg[1])
	}
}

func testFusedConvColdOutput(t *testing.T, kernel, group int) {
	r := rand.New(rand.NewPCG(71, uint64(kernel*8+group)))
	const n, c, m, h, w = 4, 16, 32, 32, 32
	if n*m*h*w*4 < coldOutput || m*h*w*4 >= coldOutput {
		t.Fatalf("outputs of %d and %d bytes do not straddle coldOutput", n*m*h*w*4, m*h*w*4)
	}
	xs, ws, ys := []int{n, c, h, w}, []int{m, c / group, kernel, kernel}, []int{n, m, h, w}
	x := toNHWC(tensor.From(xs, randomFloats(r, xs)))
	res := toNHWC(tensor.From(ys, randomFloats(r, ys)))
	wt := tensor.From(ws, randomFloats(r, ws))
	b := tensor.From([]int{m}, randomFloats(r, []int{m}))
	pad := int64(kernel / 2)
	attrs := []*onnxpb.Attribute{
		opstest.AttrInts("pads", pad, pad, pad, pad), opstest.AttrInt("group", int64(group)), opstest.AttrString("activation", "Relu"),
		opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1), opstest.AttrInt("nhwc_residual", 1),
	}
	in := make([]*tensor.Tensor, FusedInputs)
	in[FusedX], in[FusedW], in[FusedB], in[FusedResidual] = x, wt, b, res
	absent := absentInputs(in)
	consts := make([]*tensor.Tensor, FusedInputs)
	consts[FusedW], consts[FusedB] = wt, b
	image := func(t *tensor.Tensor, i int) *tensor.Tensor {
		per := t.Len() / n
		return tensor.From(append([]int{1}, t.Shape[1:]...), t.Data.([]float32)[i*per:(i+1)*per])
	}
	for _, e := range engines() {
		for _, q := range []bool{false, true} {
			name := fmt.Sprintf("%d×%d group %d %s int8=%v", kernel, kernel, group, engineName(e), q)
			cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs, consts: consts,
				absent: absent, engine: e, quantize: q, scheme: quant.PerChannel})
			all, err := cp.run1(in...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := all.Data.([]float32)
			per := len(got) / n
			for i := range n {
				one := make([]*tensor.Tensor, FusedInputs)
				copy(one, in)
				one[FusedX], one[FusedResidual] = image(x, i), image(res, i)
				y, err := cp.run1(one...)
				if err != nil {
					t.Fatalf("%s image %d: %v", name, i, err)
				}
				for j, v := range y.Data.([]float32) {
					if math.Float32bits(v) != math.Float32bits(got[i*per+j]) {
						t.Fatalf("%s: image %d y[%d] = %v in the batch, %v alone", name, i, j, got[i*per+j], v)
					}
				}
			}
		}
	}
}
