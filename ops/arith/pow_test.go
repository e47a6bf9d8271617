package arith

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestPow(t *testing.T) {
	x := tensor.From([]int{6}, []float32{float32(math.Copysign(0, -1)), 0, 4, -4, float32(math.Inf(-1)), float32(math.NaN())})
	for _, e := range []float32{2, 0.5, 3, -1} {
		out, err := run(t, "Pow", 15, nil, x, tensor.Scalar(e))
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float32) {
			want := float32(math.Pow(float64(x.Data.([]float32)[i]), float64(e)))
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Errorf("Pow(%v, %v) = %v, want %v", x.Data.([]float32)[i], e, got, want)
			}
		}
	}
	for _, c := range []struct {
		x, y *tensor.Tensor
		want any
	}{
		{tensor.From([]int{3}, []int64{3, -2, 2}), tensor.From([]int{3}, []int64{40, 3, 63}), []int64{int64(intPowRef(3, 40)), -8, math.MinInt64}},
		{tensor.From([]int{4}, []int32{2, 1, -1, -1}), tensor.From([]int{4}, []int32{-1, -5, -2, -3}), []int32{0, 1, 1, -1}},
		{tensor.From([]int{2}, []int32{2, 3}), tensor.From([]int{2}, []float32{0.5, 2.5}), []int32{1, 15}},
		{tensor.From([]int{2}, []float32{2, 3}), tensor.From([]int{2}, []int64{3, -1}), []float32{8, float32(1.0 / 3)}},
		{tensor.From([]int{2}, []float32{2, 3}), tensor.From([]int{2}, []uint64{3, 1}), []float32{8, 3}},
		{tensor.From([]int{2}, []uint8{2, 3}), tensor.From([]int{1}, []uint8{8}), []uint8{0, 161}},
		{tensor.From([]int{2, 1}, []float64{2, 3}), tensor.From([]int{2}, []float64{2, 0.5}), []float64{4, math.Sqrt2, 9, math.Sqrt(3)}},
		// a uint64 exponent beyond int64 wraps as its int64 bits do: 2**(2^63+1) is 0
		{tensor.From([]int{2}, []int32{2, -1}), tensor.From([]int{1}, []uint64{1<<63 + 1}), []int32{0, -1}},
	} {
		out, err := run(t, "Pow", 15, nil, c.x, c.y)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(out[0].Data) != fmt.Sprint(c.want) || out[0].DType != c.x.DType {
			t.Errorf("Pow(%v, %v) = %v %v, want %v", c.x.Data, c.y.Data, out[0].DType, out[0].Data, c.want)
		}
	}
	if _, err := run(t, "Pow", 15, nil, x, tensor.From([]int{1}, []string{"2"})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("string exponent: %v", err)
	}
	if _, err := run(t, "Pow", 15, nil, tensor.From([]int{1}, []bool{true}), tensor.Scalar(float32(2))); !errors.Is(err, ops.ErrInput) {
		t.Errorf("bool base: %v", err)
	}
}

// TestPowHalf: FP16 and BF16 bases compute in float32 (a square by
// multiplication) and round once.
func TestPowHalf(t *testing.T) {
	v := []float32{-3, 0.5, 1.5, 7}
	for _, e := range []float32{2, 0.5, 1.5} {
		for _, x := range []*tensor.Tensor{
			tensor.From([]int{4}, tensor.Float32ToHalf[tensor.F16](v)),
			tensor.From([]int{4}, tensor.Float32ToHalf[tensor.BF16](v)),
		} {
			out, err := run(t, "Pow", 15, nil, x, tensor.Scalar(e))
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, 4)
			for i, b := range ops.HalfTo32(x).Data.([]float32) {
				want[i] = float32(math.Pow(float64(b), float64(e)))
			}
			if w := ops.ToHalf(tensor.From([]int{4}, want), x.DType); out[0].DType != x.DType || fmt.Sprint(out[0].Data) != fmt.Sprint(w.Data) {
				t.Errorf("%v Pow(%v, %v) = %v, want %v", x.DType, v, e, out[0].Float64s(), w.Float64s())
			}
		}
	}
}

func intPowRef(b, e int64) int64 {
	r := int64(1)
	for range e {
		r *= b
	}
	return r
}
