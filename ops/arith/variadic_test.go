package arith

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestVariadic(t *testing.T) {
	a := tensor.From([]int{2, 1}, []float32{1, 2})
	b := tensor.From([]int{3}, []float32{10, 20, 30})
	c := tensor.Scalar(float32(100))
	for op, want := range map[string][]float32{
		"Sum":  {111, 121, 131, 112, 122, 132},
		"Mean": {37, 121.0 / 3, 131.0 / 3, 112.0 / 3, 122.0 / 3, 44},
		"Min":  {1, 1, 1, 2, 2, 2},
		"Max":  {100, 100, 100, 100, 100, 100},
	} {
		out, err := run(t, op, 13, nil, a, b, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out[0].Shape, []int{2, 3}) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Errorf("%s = %v %v, want [2 3] %v", op, out[0].Shape, out[0].Data, want)
		}
		// One input is itself.
		out, err = run(t, op, 13, nil, b)
		if err != nil || !slices.Equal(out[0].Data.([]float32), b.Data.([]float32)) {
			t.Errorf("%s of one input = %v, %v", op, out, err)
		}
		// Before opset 8 operands must share one shape.
		if _, err := run(t, op, 7, nil, a, b); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s at opset 7 broadcast: %v", op, err)
		}
		if _, err := run(t, op, 7, nil, b, b); err != nil {
			t.Errorf("%s at opset 7: %v", op, err)
		}
		// An absent input is an input error.
		if _, err := run(t, op, 13, nil, b, nil); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s with an absent input: %v", op, err)
		}
	}
	// NaN wins Min and Max, as numpy's minimum and maximum.
	nan := float32(math.NaN())
	out, err := run(t, "Max", 13, nil, tensor.From([]int{2}, []float32{nan, 1}), tensor.From([]int{2}, []float32{1, nan}))
	if err != nil || !(out[0].Data.([]float32)[0] != out[0].Data.([]float32)[0]) || !(out[0].Data.([]float32)[1] != out[0].Data.([]float32)[1]) {
		t.Errorf("Max with NaN = %v, %v", out, err)
	}
	// Integer Min and Max; Sum and Mean take floats only.
	out, err = run(t, "Max", 13, nil, tensor.From([]int{2}, []uint64{1, 1 << 63}), tensor.From([]int{1}, []uint64{5}))
	if err != nil || !slices.Equal(out[0].Data.([]uint64), []uint64{5, 1 << 63}) {
		t.Errorf("uint64 Max = %v, %v", out, err)
	}
	if _, err := run(t, "Sum", 13, nil, tensor.From([]int{1}, []int32{1}), tensor.From([]int{1}, []int32{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("int32 Sum: %v", err)
	}
	// FP16 Mean rounds once from the float32 mean.
	h := func(v ...float32) *tensor.Tensor {
		return tensor.From([]int{len(v)}, tensor.Float32ToHalf[tensor.F16](v))
	}
	out, err = run(t, "Mean", 13, nil, h(1, 2), h(2, 3), h(4, 5))
	if err != nil || out[0].DType != tensor.Float16 || !slices.Equal(tensor.HalfToFloat32(out[0].Data.([]tensor.F16)), []float32{tensor.F16From(float32(7) / 3).Float32(), tensor.F16From(float32(10) / 3).Float32()}) {
		t.Errorf("FP16 Mean = %v, %v", out, err)
	}
}
