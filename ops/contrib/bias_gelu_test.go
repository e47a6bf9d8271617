package contrib

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestBiasGeluMatchesDefinition: C = gelu(A + B), the sum in float32, B
// added to every row of A.
func TestBiasGeluMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randn(r, 3, 3, 5, 7), randn(r, 1, 7)
	c, err := run(t, "BiasGelu", nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	av, bv := a.Data.([]float32), b.Data.([]float32)
	want := make([]float64, len(av))
	for i := range av {
		want[i] = geluOf(float64(av[i] + bv[i%7]))
	}
	if err := near(c, want, 1e-6, 1e-37); err != nil {
		t.Errorf("BiasGelu%v", err)
	}
	ch, err := run(t, "BiasGelu", nil, half(a), half(b))
	if err != nil {
		t.Fatal(err)
	}
	if ch.DType != tensor.Float16 || len(ch.Shape) != 3 {
		t.Errorf("BiasGelu on FLOAT16 gives %v%v", ch.DType, ch.Shape)
	}
}

// TestBiasGeluBadBias: B must be a vector of A's last dimension, and A
// not a scalar.
func TestBiasGeluBadBias(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := randn(r, 1, 2, 4)
	for _, c := range [][2]*tensor.Tensor{
		{a, randn(r, 1, 3)}, {a, randn(r, 1, 1, 4)}, {a, randn(r, 1, 2, 4)},
		{tensor.Scalar(float32(1)), randn(r, 1, 1)},
	} {
		if _, err := run(t, "BiasGelu", nil, c[0], c[1]); !errors.Is(err, ops.ErrInput) {
			t.Errorf("BiasGelu of %v and %v: %v, want an input error", c[0].Shape, c[1].Shape, err)
		}
	}
}
