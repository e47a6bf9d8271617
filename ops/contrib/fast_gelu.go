package contrib

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "FastGelu", Since: 1, Fold: true}, buildFastGelu)
}

// fastGelu implements FastGelu, GELU's tanh approximation
// Y = 0.5·X·(1 + tanh(√(2/π)·(X + 0.044715·X³))), with an optional bias, a
// vector of X's last dimension, added to each row of X first (in
// float32), on the engine's GeluTanh kernel.
type fastGelu struct{}

func buildFastGelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 2, 1, 1); err != nil {
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
	geluTanh := c.Engine().Table().GeluTanh
	if len(v) > 0 {
		err = rowBlocks(c, len(v)/size, size, func(r0, r1 int) {
			src, dst := v[r0*size:r1*size], y[r0*size:r1*size]
			if bias != nil {
				for i := range dst {
					dst[i] = src[i] + bias[i%size]
				}
				src = dst
			}
			geluTanh(dst, src)
		})
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}
