package contrib

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// fastGeluDef is FastGelu's definition, 0.5·x·(1 + tanh(√(2/π)·(x +
// 0.044715·x³))), in float64.
func fastGeluDef(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// TestFastGeluMatchesDefinition checks FastGelu without and with its
// bias against the tanh form, where 1 + tanh does not cancel in float64.
func TestFastGeluMatchesDefinition(t *testing.T) {
	v := sweep(5)
	x := tensor.From([]int{len(v)}, v)
	y, err := run(t, "FastGelu", nil, x)
	if err != nil {
		t.Fatal(err)
	}
	if err := near(y, mapF64(v, fastGeluDef), 1e-6, 1e-30); err != nil {
		t.Errorf("FastGelu%v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	xb, b := randn(r, 2, 4, 3, 11), randn(r, 0.5, 11)
	y, err = run(t, "FastGelu", nil, xb, b)
	if err != nil {
		t.Fatal(err)
	}
	xv, bv := xb.Data.([]float32), b.Data.([]float32)
	want := make([]float64, len(xv))
	for i := range xv {
		want[i] = fastGeluDef(float64(xv[i] + bv[i%11]))
	}
	if err := near(y, want, 1e-6, 1e-30); err != nil {
		t.Errorf("FastGelu with a bias%v", err)
	}
	if _, err := run(t, "FastGelu", nil, xb, randn(r, 1, 4)); !errors.Is(err, ops.ErrInput) {
		t.Errorf("FastGelu with a bias of the wrong length: %v", err)
	}
}

// TestFastGeluTails: the far tails are 0 and x, with no NaN from tanh's
// cancellation.
func TestFastGeluTails(t *testing.T) {
	x := tensor.From([]int{4}, []float32{-100, -30, 30, 100})
	y, err := run(t, "FastGelu", nil, half(x))
	if err != nil {
		t.Fatal(err)
	}
	if err := near(y, []float64{0, 0, 30, 100}, 0, 0); err != nil {
		t.Errorf("FastGelu%v", err)
	}
}
