package ops_test

import (
	"context"
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

// TestSingleFromArena: a run's Arena hands its Singles out again after
// Reset, in the order it handed them out, reset to the rank asked for;
// Float32s boxes a slice once and holds whatever slice it is given, so
// a step given back its Single and its buffer allocates nothing. A
// Context without an Arena makes a new Single each time.
func TestSingleFromArena(t *testing.T) {
	a := ops.NewArena()
	c := ops.NewContext(context.Background(), nil, false).WithArena(a)
	r1, r2 := c.NewSingle(4), c.NewSingle(2)
	if r1 == r2 {
		t.Fatal("one run was handed the same Single twice")
	}
	y := make([]float32, 8)
	r1.Shape()[0] = 5
	r1.Float32s(y)
	a.Reset()
	s1, s2 := c.NewSingle(3), c.NewSingle(7)
	if s1 != r1 || s2 != r2 {
		t.Fatal("after Reset the Singles were not handed out again in order")
	}
	if len(s1.Shape()) != 3 || s1.Shape()[0] != 0 || len(s2.Shape()) != 7 {
		t.Fatalf("Singles handed out again have shapes %v and %v, want 3 and 7 zeros", s1.Shape(), s2.Shape())
	}
	out := s1.Float32s(y[:4])
	if got := out[0].Data.([]float32); len(got) != 4 || &got[0] != &y[0] || !slices.Equal(out[0].Shape, s1.Shape()) {
		t.Fatalf("Float32s of a shorter slice holds %d values", len(got))
	}
	if n := testing.AllocsPerRun(100, func() {
		a.Reset()
		r := c.NewSingle(4)
		r.Shape()[0] = 8
		if got := r.Float32s(y)[0].Data.([]float32); len(got) != 8 {
			t.Fatal("Float32s lost the slice")
		}
	}); n != 0 {
		t.Errorf("a Single handed out again holding the same slice: %v allocations, want 0", n)
	}
	d := ops.NewContext(context.Background(), nil, false)
	if d.NewSingle(1) == d.NewSingle(1) {
		t.Error("without an Arena a Context handed out the same Single twice")
	}
}
