package contrib

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "QuickGelu", Since: 1, Fold: true}, buildQuickGelu)
}

// QuickGeluAttrs are QuickGelu's attributes.
type QuickGeluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1.702"`
}

// quickGelu implements QuickGelu: Y = X·sigmoid(alpha·X), the sigmoid
// approximation of GELU (alpha 1.702, CLIP's) and, with alpha 1, SiLU.
type quickGelu struct{ k *ops.ScaledSigmoid }

func buildQuickGelu(n *ops.Node, at *QuickGeluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return &quickGelu{k: ops.NewScaledSigmoid(float64(at.Alpha))}, nil
}

func (q *quickGelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	v, err := values("QuickGelu", "X", x)
	if err != nil {
		return nil, err
	}
	y := make([]float32, len(v))
	tb := c.Engine().Table()
	err = rowBlocks(c, len(v), 1, func(i0, i1 int) { q.k.Apply(tb, y[i0:i1], v[i0:i1]) })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}
