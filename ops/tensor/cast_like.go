package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// CastLike converts its first input to the type of its second, as Cast
// does; saturate and round_mode change nothing here, as for Cast.
func init() {
	ops.Register(ops.Descriptor{Type: "CastLike", Since: 15, Fold: true}, buildCastLike)
}

// CastLikeAttrs are CastLike's attributes.
type CastLikeAttrs struct {
	Saturate  bool   `onnx:"saturate" default:"true"`
	RoundMode string `onnx:"round_mode" default:"up"`
}

// castLike is a compiled CastLike.
type castLike struct{}

func buildCastLike(n *ops.Node, at *CastLikeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := checkRoundMode(at.RoundMode); err != nil {
		return nil, err
	}
	return castLike{}, nil
}

func (castLike) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := CastToContext(c, in[0], in[1].DType)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
