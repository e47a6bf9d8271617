package ops_test

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestSingle: a Single's shape has its rank, takes no append in place
// (two appends to it must not share storage), and its outputs are one
// tensor of that shape and data; ranks beyond the inline array work too.
func TestSingle(t *testing.T) {
	for _, rank := range []int{0, 1, 4, 6, 7, 9} {
		r := ops.NewSingle(rank)
		sh := r.Shape()
		if len(sh) != rank || cap(sh) != rank {
			t.Fatalf("rank %d: shape of len %d cap %d", rank, len(sh), cap(sh))
		}
		for i := range sh {
			sh[i] = i + 2
		}
		a, b := append(r.Shape(), 1), append(r.Shape(), 2)
		if rank > 0 && a[rank] != 1 {
			t.Fatalf("rank %d: appends to the shape share storage: %v %v", rank, a, b)
		}
		data := make([]float32, 3)
		outs := r.Outputs(tensor.Float32, data)
		if len(outs) != 1 || outs[0] != r.Tensor() || outs[0].DType != tensor.Float32 || !slices.Equal(outs[0].Shape, sh) {
			t.Fatalf("rank %d: outputs %+v, want one float32 tensor of shape %v", rank, outs, sh)
		}
		if got := outs[0].Data.([]float32); &got[0] != &data[0] {
			t.Fatalf("rank %d: the output does not hold the data given", rank)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		r := ops.NewSingle(4)
		r.Shape()[0] = 1
		_ = r.Outputs(tensor.Float32, []float32(nil))
	}); n > 1 {
		t.Errorf("a Single of rank 4 and its outputs: %v allocations, want 1", n)
	}
}
