package loss

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "NegativeLogLikelihoodLoss", Since: 12, Fold: true}, buildNegativeLogLikelihoodLoss)
}

// negativeLogLikelihoodLoss is a compiled NegativeLogLikelihoodLoss: its
// input already holds log-probabilities.
type negativeLogLikelihoodLoss struct{ r reduction }

func buildNegativeLogLikelihoodLoss(n *ops.Node, at *Attrs) (ops.Operator, error) {
	r, err := compile(n, at, 1)
	if err != nil {
		return nil, err
	}
	return negativeLogLikelihoodLoss{r: r}, nil
}

// Run takes the input, the target and an optional weight, and returns
// the loss.
func (op negativeLogLikelihoodLoss) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g, err := newGeom("NegativeLogLikelihoodLoss", in[0], in[1], ops.Optional(in, 2))
	if err != nil {
		return nil, err
	}
	loss, err := g.loss(in[0].Float64s(), op.r)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{loss}, nil
}
