package contrib

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestSkipSimplifiedLayerNormMatchesDefinition: the RMS normalization of
// (input + skip) + bias, bias being input 3; mean is 0.
func TestSkipSimplifiedLayerNormMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, shape := range [][]int{{2, 5, 23}, {7, 23}} {
		x, skip, gamma, bias := randn(r, 2, shape...), randn(r, 1, shape...), randn(r, 0.5, 23), randn(r, 1, 23)
		for _, b := range []*tensor.Tensor{bias, nil} {
			in := []*tensor.Tensor{x, skip, gamma}
			var bv []float32
			if b != nil {
				in, bv = append(in, b), b.Data.([]float32)
			}
			outs, err := opstest.Run(t, node("SkipSimplifiedLayerNormalization", 4, floatAttr("epsilon", 1e-6)), in...)
			if err != nil {
				t.Fatal(err)
			}
			y, mean, inv, sum := skipNormDef(x.Data.([]float32), skip.Data.([]float32), gamma.Data.([]float32), nil, bv, 23, float64(float32(1e-6)), true)
			for i, want := range [][]float64{y, mean, inv, f64s(sum)} {
				if err := near(outs[i], want, 1e-5, 1e-6); err != nil {
					t.Errorf("%v, bias %v: output %d%v", shape, b != nil, i, err)
				}
			}
		}
	}
}

// TestSkipSimplifiedLayerNormBadBias: the bias is a vector of the hidden
// size.
func TestSkipSimplifiedLayerNormBadBias(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	x := randn(r, 1, 2, 6)
	if _, err := run(t, "SkipSimplifiedLayerNormalization", nil, x, x, randn(r, 1, 6), randn(r, 1, 5)); !errors.Is(err, ops.ErrInput) {
		t.Errorf("a bias of 5 over a hidden size of 6: %v", err)
	}
}
