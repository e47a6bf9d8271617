package tensor

import (
	"math"
	"testing"
)

// TestSliceRows: rows of a tensor share its data and have its inner
// shape; all of its rows are the tensor itself.
func TestSliceRows(t *testing.T) {
	x := From([]int{3, 2, 2}, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	r := x.SliceRows(1, 2)
	if ShapeString(r.Shape) != ShapeString([]int{2, 2, 2}) || r.Data.([]int32)[0] != 4 || len(r.Data.([]int32)) != 8 {
		t.Fatalf("rows 1-2: %v %v", r.Shape, r.Data)
	}
	r.Data.([]int32)[0] = -1
	if x.Data.([]int32)[4] != -1 {
		t.Fatal("rows do not share the tensor's data")
	}
	if x.SliceRows(0, 3) != x {
		t.Fatal("all rows are not the tensor itself")
	}
	if len(x.Shape) != 3 || x.Shape[0] != 3 {
		t.Fatalf("the tensor's shape changed: %v", x.Shape)
	}
}

// TestSameBits: equal bits of every kind of element, NaNs by payload, 0
// and -0 apart, shapes and types apart.
func TestSameBits(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	f := func(v ...float32) *Tensor { return From([]int{len(v)}, v) }
	cases := []struct {
		a, b *Tensor
		want bool
	}{
		{f(1, nan), f(1, nan), true},
		{f(1, nan), f(1, math.Float32frombits(0x7fc00002)), false},
		{f(0), f(float32(math.Copysign(0, -1))), false},
		{f(1, 2), From([]int{1, 2}, []float32{1, 2}), false},
		{f(1, 2), From([]int{2}, []float64{1, 2}), false},
		{From([]int{2}, []bool{true, false}), From([]int{2}, []bool{true, false}), true},
		{From([]int{2}, []bool{true, false}), From([]int{2}, []bool{true, true}), false},
		{From([]int{2}, []string{"a", "b"}), From([]int{2}, []string{"a", "b"}), true},
		{From([]int{2}, []string{"a", "b"}), From([]int{2}, []string{"a", "c"}), false},
		{From([]int{2}, []int64{1, 2}), From([]int{2}, []int64{1, 3}), false},
	}
	for i, c := range cases {
		if got := SameBits(c.a, c.b); got != c.want {
			t.Errorf("case %d: SameBits = %v, want %v", i, got, c.want)
		}
	}
}
