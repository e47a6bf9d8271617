package contrib

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "BiasGelu", Since: 1, Fold: true}, buildBiasGelu)
}

// biasGelu implements BiasGelu: C = gelu(A + B), GELU's exact (erf) form,
// with B a vector of A's last dimension added to each of its rows (the
// fusion of a MatMul's bias Add with the Gelu after it).
type biasGelu struct{}

func buildBiasGelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return biasGelu{}, nil
}

func (biasGelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b := in[0], in[1]
	if err := sameType("BiasGelu", a, b); err != nil {
		return nil, err
	}
	v, err := values("BiasGelu", "A", a)
	if err != nil {
		return nil, err
	}
	bias, err := rowBias("BiasGelu", "B", a, b)
	if err != nil {
		return nil, err
	}
	y, err := geluRows(c, v, bias, a.Shape[a.Rank()-1])
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(a.DType, a.Shape, y)}, nil
}

// rowBias returns the values of bias, an input of op named what that
// must be a vector as long as x's last dimension (x of rank 1 or more).
func rowBias(op, what string, x, bias *tensor.Tensor) ([]float32, error) {
	if x.Rank() < 1 {
		return nil, ops.InputErrorf("%s takes an input of rank 1 or more, got a scalar", op)
	}
	if err := vector(op, what, bias, x.Shape[x.Rank()-1]); err != nil {
		return nil, err
	}
	return values(op, what, bias)
}
