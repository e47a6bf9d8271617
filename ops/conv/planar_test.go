package conv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestPlanarBlocks: an image's first convolution, run plane by plane in
// blocks of output rows, gives the same bits whatever the blocks (one,
// two or eight cores; heights whose last block is short; one image or
// three), and a block is never under four rows (but of a shorter image).
func TestPlanarBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	w := tensor.From([]int{8, 3, 3, 3}, randomFloats(r, []int{8, 3, 3, 3}))
	bias := tensor.From([]int{8}, randomFloats(r, []int{8}))
	attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInts("strides", 2, 2)}
	var engines []*gemm.Engine
	for _, threads := range []int{1, 2, 8} {
		e := gemm.New(dispatch.Default(), threads)
		defer e.Close()
		engines = append(engines, e)
	}
	for _, shape := range [][]int{{1, 3, 48, 192}, {1, 3, 46, 40}, {3, 3, 30, 20}, {2, 3, 3, 7}} {
		x := tensor.From(shape, randomFloats(r, shape))
		var want []float32
		for _, e := range engines {
			cp, err := compile(spec{op: "Conv", attrs: attrs, inputs: 3, consts: []*tensor.Tensor{nil, w, bias}, engine: e})
			if err != nil {
				t.Fatal(err)
			}
			y, err := cp.run1(x, w, bias)
			if err != nil {
				t.Fatal(err)
			}
			got := y.Data.([]float32)
			name := fmt.Sprintf("%v on %d threads", shape, e.Threads())
			oh := (shape[2]-1)/2 + 1
			br := planarBlockRows(oh, shape[0], e.Threads())
			if br >= oh && e.Threads() > 1 && oh > 4 {
				t.Errorf("%s: one block of %d rows", name, oh)
			}
			if br < min(4, oh) { // the kernel adds a block's rows together
				t.Errorf("%s: blocks of %d rows", name, br)
			}
			if want == nil {
				want = got
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: differs from one thread's", name)
			}
		}
	}
}
