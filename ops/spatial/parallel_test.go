package spatial

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestResizeSplit: Resize of large odd-sized inputs (bilinear planes,
// cubic passes, nearest gathers, a last-axis pass of one tap per
// element, an outer-axis pass over long rows) and a constant Pad split
// across two cores (the probe sees it), give the bits of one core, and
// where the leading axes are not resized, the bits of each leading slice
// resized alone (small enough to run whole on the caller).
func TestResizeSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 6))
	one := gemm.New(dispatch.Default(), 1)
	defer one.Close()
	f32 := func(shape ...int) *tensor.Tensor {
		d := make([]float32, ops.ProdInts(shape))
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		return tensor.From(shape, d)
	}
	mode := func(m string) []*onnxpb.Attribute { return []*onnxpb.Attribute{opstest.AttrString("mode", m)} }
	scales := func(s ...float32) *tensor.Tensor { return opstest.F32s([]int{len(s)}, s...) }
	for _, tc := range []struct {
		op    string
		attrs []*onnxpb.Attribute
		x     *tensor.Tensor
		rest  []*tensor.Tensor // the inputs after x
		lead  int              // leading axes each slice of which resizes alone (0: none)
	}{
		{"Resize", mode("linear"), f32(2, 3, 97, 131), ins(nil, scales(1, 1, 2.5, 1.5)), 2},
		{"Resize", mode("cubic"), f32(2, 3, 61, 67), ins(nil, scales(1, 1, 2, 2)), 2},
		{"Resize", mode("nearest"), f32(2, 3, 61, 67), ins(nil, scales(1, 1, 3, 3)), 2},
		{"Resize", mode("linear"), f32(300, 451), ins(nil, scales(1, 1.7)), 1},
		{"Resize", mode("linear"), f32(40, 3001), ins(nil, scales(2.5, 1)), 0},
		{"Pad", nil, f32(8, 200, 171), ins(opstest.I64s(0, 1, 3, 0, 1, 1), tensor.Scalar(float32(-2))), 1},
	} {
		in := append(ins(tc.x), tc.rest...)
		op, _, err := opstest.Compile(opstest.Node{Op: tc.op, Opset: 19, Attrs: tc.attrs}, len(in))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		what := fmt.Sprintf("%s %v of %v", tc.op, tc.attrs, tc.x.Shape)
		split := opstest.SplitRun(t, what, op, in...)[0]
		if tc.lead == 0 {
			continue
		}
		var whole []float32
		lead := ops.ProdInts(tc.x.Shape[:tc.lead])
		inner := tc.x.Len() / lead
		for k := range lead {
			shape := append(slices.Repeat([]int{1}, tc.lead), tc.x.Shape[tc.lead:]...)
			part := tensor.From(shape, tc.x.Data.([]float32)[k*inner:(k+1)*inner])
			y, err := op.Run(ops.NewContext(context.Background(), one, false), append(ins(part), tc.rest...))
			if err != nil {
				t.Fatalf("%s, slice %d: %v", what, k, err)
			}
			if y[0].Len() >= ops.TickEvery {
				t.Fatalf("%s: a slice of %d elements does not run whole", what, y[0].Len())
			}
			whole = append(whole, y[0].Data.([]float32)...)
		}
		if !opstest.SameBits(split.Data, whole) {
			t.Errorf("%s: the split differs from the slices resized alone", what)
		}
	}
}
