package contrib

import (
	"math"

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
type quickGelu struct{ alpha float64 }

func buildQuickGelu(n *ops.Node, at *QuickGeluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.RequireInputs(1); err != nil {
		return nil, err
	}
	return &quickGelu{alpha: float64(at.Alpha)}, nil
}

func (q *quickGelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	v, err := values("QuickGelu", "X", x)
	if err != nil {
		return nil, err
	}
	y := make([]float32, len(v))
	err = rowBlocks(c, len(v), 1, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			t := float64(v[i])
			y[i] = float32(t / (1 + math.Exp(-q.alpha*t)))
		}
	})
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{result(x.DType, x.Shape, y)}, nil
}
