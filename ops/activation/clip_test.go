package activation

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestClip(t *testing.T) {
	x := tensor.From([]int{5}, []float32{-3, -1, 0, 2, float32(math.NaN())})
	lo, hi := tensor.Scalar(float32(-1.5)), tensor.Scalar(float32(1))
	out, err := run(t, "Clip", 13, nil, x, lo, hi)
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{-1.5, -1, 0, 1}) || g[4] == g[4] {
		t.Errorf("Clip = %v, %v", out, err)
	}
	// Only max; min greater than max gives max everywhere.
	out, err = run(t, "Clip", 13, nil, x, nil, hi)
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{-3, -1, 0, 1}) {
		t.Errorf("Clip max only = %v, %v", out, err)
	}
	out, err = run(t, "Clip", 13, nil, x, lo)
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{-1.5, -1, 0, 2}) {
		t.Errorf("Clip min only = %v, %v", out, err)
	}
	out, err = run(t, "Clip", 13, nil, x, tensor.Scalar(float32(2)), tensor.Scalar(float32(1)))
	if g := out[0].Data.([]float32); err != nil || !slices.Equal(g[:4], []float32{1, 1, 1, 1}) {
		t.Errorf("Clip min>max = %v, %v", out, err)
	}
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{-3, 0.5, 3}))
	out, err = run(t, "Clip", 13, nil, h, tensor.Scalar(tensor.F16From(-1)), tensor.Scalar(tensor.F16From(1)))
	if err != nil || out[0].DType != tensor.Float16 || !slices.Equal(out[0].Float64s(), []float64{-1, 0.5, 1}) {
		t.Errorf("FP16 Clip = %v, %v", out, err)
	}
	out, err = run(t, "Clip", 13, nil, tensor.From([]int{3}, []uint8{0, 100, 255}), tensor.Scalar(uint8(10)), tensor.Scalar(uint8(200)))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{10, 100, 200}) {
		t.Errorf("uint8 Clip = %v, %v", out, err)
	}
	for _, b := range []*tensor.Tensor{tensor.Scalar(int32(1)), tensor.From([]int{2}, []float32{1, 2})} {
		if _, err := run(t, "Clip", 13, nil, x, b); !errors.Is(err, ops.ErrInput) {
			t.Errorf("bound %v: %v", b, err)
		}
	}
	if _, err := run(t, "Clip", 13, nil, tensor.From([]int{1}, []bool{true})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("bool Clip: %v", err)
	}
}

// TestClip6 checks Clip before opset 11, its bounds attributes: float
// bounds on every floating-point type, unbounded by default.
func TestClip6(t *testing.T) {
	v := []float32{-3, -1, 0, 2.5, 1e30}
	out, err := run(t, "Clip", 6, nil, tensor.From([]int{5}, v))
	if err != nil || !slices.Equal(out[0].Data.([]float32), v) {
		t.Errorf("Clip without bounds = %v, %v", out, err)
	}
	attrs := []*onnxpb.Attribute{fattr("min", -1.5), fattr("max", 2)}
	for _, x := range []*tensor.Tensor{
		tensor.From([]int{5}, v),
		tensor.From([]int{5}, f64s(v)),
		tensor.From([]int{5}, tensor.Float32ToHalf[tensor.BF16](v)),
	} {
		out, err := run(t, "Clip", 6, attrs, x)
		if err != nil || out[0].DType != x.DType || !slices.Equal(out[0].Float64s(), []float64{-1.5, -1, 0, 2, 2}) {
			t.Errorf("%v Clip = %v, %v", x.DType, out, err)
		}
	}
	if _, err := run(t, "Clip", 6, attrs, tensor.From([]int{1}, []int32{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("INT32 Clip at opset 6: %v", err)
	}
}
