package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// TestSoftmaxAndTanh32 checks the float32 softmax (a kernel table's row
// kernel) against the float64 loop, a fully masked row, and tanh32
// against math.Tanh.
func TestSoftmaxAndTanh32(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, tab := range dispatch.Available() {
		for _, n := range []int{1, 3, 4, 7, 64, 129} {
			x := randFloats(r, n, 0)
			y64 := make([]float64, n)
			for i := range x {
				x[i] *= 10
				y64[i] = float64(x[i])
			}
			softmaxRow(y64, nil)
			softmaxRow(x, tab.SoftmaxRow)
			for i := range x {
				if math.Abs(float64(x[i])-y64[i]) > 1e-6 {
					t.Fatalf("%s n=%d: softmax32[%d] = %v, want %v", tab, n, i, x[i], y64[i])
				}
			}
		}
		masked := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
		softmaxRow(masked, tab.SoftmaxRow)
		if !math.IsNaN(float64(masked[0])) {
			t.Fatalf("%s: a fully masked row: %v, want NaN as the reference gives", tab, masked)
		}
	}
	masked := []float64{math.Inf(-1), math.Inf(-1)}
	softmaxRow(masked, nil)
	if !math.IsNaN(masked[0]) {
		t.Fatalf("a fully masked float64 row: %v, want NaN", masked)
	}
	for i := 0; i < 100000; i++ {
		x := float32(r.Float64()*40 - 20)
		if d := math.Abs(float64(tanh32(x)) - math.Tanh(float64(x))); d > 2e-7 {
			t.Fatalf("tanh32(%v) is %g off", x, d)
		}
	}
}
