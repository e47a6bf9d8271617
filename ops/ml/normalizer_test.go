package ml

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestNormalizer(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int64{1, 2, 4, -1, -2, 0})
	for norm, want := range map[string][]float64{
		"MAX": {0.25, 0.5, 1, -1, -2, 0}, // the second row's maximum is 0: unchanged
		"L1":  {1.0 / 7, 2.0 / 7, 4.0 / 7, -1.0 / 3, -2.0 / 3, 0},
		"L2":  {1 / math.Sqrt(21), 2 / math.Sqrt(21), 4 / math.Sqrt(21), -1 / math.Sqrt(5), -2 / math.Sqrt(5), 0},
	} {
		if y := run(t, node("Normalizer", 1, 1, opstest.AttrString("norm", norm)), x)[0]; !near(y, want, 1e-6) {
			t.Errorf("%s: got %v, want %v", norm, y.Data, want)
		}
	}
	// L2 of huge values neither overflows nor underflows.
	y := run(t, node("Normalizer", 1, 1, opstest.AttrString("norm", "L2")), tensor.From([]int{2, 2}, []float64{3e300, 4e300, 3e-300, 4e-300}))[0]
	if !near(y, []float64{0.6, 0.8, 0.6, 0.8}, 1e-6) {
		t.Errorf("extreme L2: %v", y.Data)
	}
}
