package contrib

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "BiasAdd", Since: 1, Fold: true}, buildBiasAdd)
}

// biasAdd implements BiasAdd, the residual connection of diffusion
// models' transformer blocks: Y = (X + bias) + skip, X and skip of shape
// [N, S, C] and bias of [C]. ONNX Runtime implements it on CUDA only, for
// C of 320, 640 or 1280 (its kernel's limit); here any C is taken.
type biasAdd struct{}

func buildBiasAdd(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return biasAdd{}, nil
}

func (biasAdd) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, b, skip := in[0], in[1], in[2]
	if err := sameType("BiasAdd", x, b, skip); err != nil {
		return nil, err
	}
	if x.Rank() != 3 {
		return nil, ops.InputErrorf("BiasAdd's X must have shape [N, S, C], got %s", tensor.ShapeString(x.Shape))
	}
	if !slices.Equal(skip.Shape, x.Shape) {
		return nil, ops.InputErrorf("BiasAdd's skip must have X's shape %s, got %s", tensor.ShapeString(x.Shape), tensor.ShapeString(skip.Shape))
	}
	ch := x.Shape[2]
	if err := vector("BiasAdd", "bias", b, ch); err != nil {
		return nil, err
	}
	v, err := values("BiasAdd", "X", x)
	if err != nil {
		return nil, err
	}
	bias, err := values("BiasAdd", "bias", b)
	if err != nil {
		return nil, err
	}
	res, err := values("BiasAdd", "skip", skip)
	if err != nil {
		return nil, err
	}
	y := slices.Clone(v)
	if ch > 0 {
		add := c.Engine().Table().AddBias
		err = rowBlocks(c, len(y)/ch, ch, func(r0, r1 int) {
			for r := r0; r < r1; r++ {
				add(y[r*ch:(r+1)*ch], bias, res[r*ch:(r+1)*ch])
			}
		})
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}
