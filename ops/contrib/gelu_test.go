package contrib

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// geluOf is GELU's exact form in float64.
func geluOf(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// sweep returns the values -lim..lim in steps of 1/64 and NaN.
func sweep(lim float32) []float32 {
	var v []float32
	for x := -lim; x <= lim; x += 1.0 / 64 {
		v = append(v, x)
	}
	return append(v, float32(math.NaN()))
}

func mapF64(v []float32, f func(float64) float64) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = f(float64(x))
	}
	return w
}

// TestGeluMatchesDefinition checks Gelu against 0.5·x·erfc(-x/√2) over
// the range where it is neither 0 nor x, FLOAT and FLOAT16.
func TestGeluMatchesDefinition(t *testing.T) {
	v := sweep(14)
	x := tensor.From([]int{len(v)}, v)
	y, err := run(t, "Gelu", nil, x)
	if err != nil {
		t.Fatal(err)
	}
	if err := near(y, mapF64(v, geluOf), 1e-6, 1e-37); err != nil {
		t.Errorf("Gelu%v", err)
	}
	h := half(x)
	yh, err := run(t, "Gelu", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	if yh.DType != tensor.Float16 {
		t.Fatalf("Gelu on FLOAT16 gives %v", yh.DType)
	}
	if err := near(yh, mapF64(tensor.HalfToFloat32(h.Data.([]tensor.F16)), geluOf), 1.0/2048, 1e-7); err != nil {
		t.Errorf("Gelu on FLOAT16%v", err)
	}
}

// TestGeluShapes: a scalar and an empty tensor keep their shapes.
func TestGeluShapes(t *testing.T) {
	for _, x := range []*tensor.Tensor{tensor.Scalar(float32(1)), tensor.From([]int{0, 3}, []float32{})} {
		y, err := run(t, "Gelu", nil, x)
		if err != nil {
			t.Fatal(err)
		}
		if y.Rank() != x.Rank() || y.Len() != x.Len() {
			t.Errorf("Gelu of %v gives %v", x.Shape, y.Shape)
		}
	}
}
