package ops

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// TestFloat32sRoundTrip: every floating-point type reads as float32 and
// rounds back to itself, half types through HalfTo32 and ToHalf alike;
// integers are input errors.
func TestFloat32sRoundTrip(t *testing.T) {
	v := []float32{1, -2.5, 0.125, 3}
	for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16} {
		x := &tensor.Tensor{DType: dt, Shape: []int{4}, Data: RoundFloat32s(v, dt)}
		got, err := Float32s(x, "Op")
		if err != nil || !slices.Equal(got, v) {
			t.Errorf("%v: %v %v, want %v", dt, got, err, v)
		}
		if y := FromFloat64s(dt, x.Shape, x.Float64s()); !slices.Equal(y.Float64s(), x.Float64s()) {
			t.Errorf("%v: FromFloat64s gives %v", dt, y.Float64s())
		}
		if dt == tensor.Float16 || dt == tensor.BFloat16 {
			w, ok := WidenHalf(x)
			if !ok || !slices.Equal(w, v) {
				t.Errorf("%v: WidenHalf %v %v", dt, w, ok)
			}
			if h := ToHalf(HalfTo32(x), dt); h.DType != dt || !slices.Equal(h.Float64s(), x.Float64s()) {
				t.Errorf("%v: HalfTo32 and ToHalf give %v %v", dt, h.DType, h.Float64s())
			}
			if n := NarrowHalf(dt, v); !slices.Equal((&tensor.Tensor{DType: dt, Shape: []int{4}, Data: n}).Float64s(), x.Float64s()) {
				t.Errorf("%v: NarrowHalf", dt)
			}
		}
	}
	if _, err := Float32s(tensor.From([]int{1}, []int32{1}), "Op"); !errors.Is(err, ErrInput) {
		t.Errorf("INT32: %v, want an input error", err)
	}
	if ProdInts(nil) != 1 || ProdInts([]int{2, 3, 4}) != 24 {
		t.Error("ProdInts")
	}
}
