package contrib

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "FastGelu", Since: 1, Fold: true}, buildFastGelu)
}

// fastGelu implements FastGelu, GELU's tanh approximation
// Y = 0.5·X·(1 + tanh(√(2/π)·(X + 0.044715·X³))), with an optional bias, a
// vector of X's last dimension, added to each row of X first.
type fastGelu struct{}

func buildFastGelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := n.RequireInputs(1); err != nil {
		return nil, err
	}
	return fastGelu{}, nil
}

func (fastGelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, b := in[0], ops.Optional(in, 1)
	if err := sameType("FastGelu", x, b); err != nil {
		return nil, err
	}
	v, err := values("FastGelu", "X", x)
	if err != nil {
		return nil, err
	}
	size := max(len(v), 1)
	var bias []float32
	if b != nil {
		if bias, err = rowBias("FastGelu", "bias", x, b); err != nil {
			return nil, err
		}
		size = x.Shape[x.Rank()-1]
	}
	y := make([]float32, len(v))
	if len(v) > 0 {
		err = rowBlocks(c, len(v)/size, size, func(r0, r1 int) {
			for i := r0 * size; i < r1*size; i++ {
				t := float64(v[i])
				if bias != nil {
					t = float64(v[i] + bias[i%size])
				}
				y[i] = float32(fastGeluOf(t))
			}
		})
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}

// fastGeluOf returns 0.5·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³),
// as x·sigmoid(2u), the same function without 1 + tanh u's cancellation
// for negative x.
func fastGeluOf(x float64) float64 {
	u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	return x / (1 + math.Exp(-2*u))
}
