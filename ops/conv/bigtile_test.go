package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvBigWeights runs float32 fused convolutions whose weights
// reach bigWeights (one tile of up to bigTileRows positions an image,
// gathered across the engine's cores) against Conv's definition: a 3×3
// layer of ResNet-50's last stage (narrow rows, so from gathered rows),
// strided and not, and a 1×1 one, with a residual and Relu (LeakyRelu,
// which the product does not finish in its registers, once); on every
// table with one thread and two, and the two give the same bits. The
// images' rows run as one product: two images in one tile, and seven in
// two tiles, the second starting halfway through an image.
func TestFusedConvBigWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 53))
	for _, c := range []struct {
		name    string
		x       []int // N, C, H, W
		m       int
		strides []int
		k       int  // the kernel's height and width
		leaky   bool // LeakyRelu(0.1) in place of Relu
	}{
		{name: "3x3", x: []int{2, 64, 7, 7}, m: 512, strides: []int{1, 1}, k: 3},
		{name: "3x3 stride 2", x: []int{2, 64, 14, 13}, m: 512, strides: []int{2, 2}, k: 3},
		{name: "3x3 seven images", x: []int{7, 64, 7, 6}, m: 512, strides: []int{1, 1}, k: 3},
		{name: "1x1 three images", x: []int{3, 512, 7, 7}, m: 512, strides: []int{1, 1}, k: 1},
		{name: "3x3 seven images leaky", x: []int{7, 64, 7, 6}, m: 512, strides: []int{1, 1}, k: 3, leaky: true},
	} {
		xs, ws := c.x, []int{c.m, c.x[1], c.k, c.k}
		if ops.ProdInts(ws) < bigWeights {
			t.Fatalf("%s: %d weights, under bigWeights", c.name, ops.ProdInts(ws))
		}
		p := c.k / 2
		pads, dil := []int{p, p, p, p}, []int{1, 1}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		ref := refConvolve(x.Data.([]float32), xs, w.Data.([]float32), ws, b.Data.([]float32), 1, c.strides, dil, pads, false)
		res := tensor.From(ref.shape, randomFloats(r, ref.shape))
		slope, act := 0.0, []*onnxpb.Attribute{opstest.AttrString("activation", "Relu")}
		if c.leaky {
			slope, act = 0.1, []*onnxpb.Attribute{opstest.AttrString("activation", "LeakyRelu"), opstest.AttrFloats("activation_params", 0.1)}
		}
		want := slices.Clone(ref.y)
		for i, v := range res.Data.([]float32) {
			if want[i] += float64(v); want[i] < 0 {
				want[i] *= slope
			}
		}
		attrs := []*onnxpb.Attribute{
			opstest.AttrInts("pads", int64s(pads)...), opstest.AttrInts("strides", int64s(c.strides)...),
			opstest.AttrInts("dilations", int64s(dil)...), opstest.AttrInt("nhwc_out", 1), opstest.AttrInt("nhwc_in", 1),
			opstest.AttrInt("nhwc_residual", 1),
		}
		attrs = append(attrs, act...)
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedW], in[FusedB], in[FusedResidual] = toNHWC(x), w, b, toNHWC(res)
		absent := absentInputs(in)
		consts := make([]*tensor.Tensor, FusedInputs)
		consts[FusedW], consts[FusedB] = w, b
		one := map[string][]float32{} // by table: one thread's answer
		for _, e := range engines() {
			name := fmt.Sprintf("%s %s", c.name, engineName(e))
			cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs, consts: consts, absent: absent, engine: e})
			y, err := cp.run1(in...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := toNCHW(y).Data.([]float32)
			for i, v := range got {
				if tol := 1e-5 * (4*ref.mag[i] + 1); !(math.Abs(float64(v)-want[i]) <= tol) {
					t.Fatalf("%s: y[%d] = %v, want %v ± %v", name, i, v, want[i], tol)
				}
			}
			tb := e.Table().Name
			if prev, ok := one[tb]; !ok {
				one[tb] = slices.Clone(got)
			} else if i := firstDiff(prev, got); i >= 0 {
				t.Fatalf("%s: y[%d] = %v, on one thread %v", name, i, got[i], prev[i])
			}
		}
	}
}

// firstDiff returns the first index where a and b differ in their bits,
// or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
