package contrib

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestBiasAddMatchesDefinition: Y = (X + bias) + skip in float32 exactly,
// for any number of channels.
func TestBiasAddMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []int{1, 13, 320} {
		x, b, s := randn(r, 1, 2, 3, c), randn(r, 1, c), randn(r, 1, 2, 3, c)
		y, err := run(t, "BiasAdd", nil, x, b, s)
		if err != nil {
			t.Fatal(err)
		}
		xv, bv, sv := x.Data.([]float32), b.Data.([]float32), s.Data.([]float32)
		want := make([]float64, len(xv))
		for i := range xv {
			want[i] = float64(xv[i] + bv[i%c] + sv[i])
		}
		if err := near(y, want, 0, 0); err != nil {
			t.Errorf("BiasAdd with %d channels%v", c, err)
		}
		yh, err := run(t, "BiasAdd", nil, half(x), half(b), half(s))
		if err != nil {
			t.Fatal(err)
		}
		if yh.DType != tensor.Float16 {
			t.Errorf("BiasAdd on FLOAT16 gives %v", yh.DType)
		}
	}
}

// TestBiasAddBadShapes: X is [N, S, C], bias [C] and skip X's shape.
func TestBiasAddBadShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := randn(r, 1, 2, 3, 4)
	for _, c := range [][3]*tensor.Tensor{
		{randn(r, 1, 6, 4), randn(r, 1, 4), randn(r, 1, 6, 4)},
		{x, randn(r, 1, 3), x},
		{x, randn(r, 1, 1, 4), x},
		{x, randn(r, 1, 4), randn(r, 1, 1, 3, 4)},
	} {
		if _, err := run(t, "BiasAdd", nil, c[0], c[1], c[2]); !errors.Is(err, ops.ErrInput) {
			t.Errorf("BiasAdd of %v, %v, %v: %v, want an input error", c[0].Shape, c[1].Shape, c[2].Shape, err)
		}
	}
}
