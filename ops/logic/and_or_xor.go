package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []string{"And", "Or", "Xor"} {
		ops.Register(ops.Descriptor{Type: op, Since: 7, Fold: true}, logicalBuilder(op))
	}
}

// logical is And, Or or Xor: f over BOOL operands that broadcast.
type logical struct {
	op string
	f  func(x, y bool) bool
}

func logicalBuilder(op string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	var f func(x, y bool) bool
	switch op {
	case "And":
		f = func(x, y bool) bool { return x && y }
	case "Or":
		f = func(x, y bool) bool { return x || y }
	default: // Xor
		f = func(x, y bool) bool { return x != y }
	}
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return logical{op: op, f: f}, nil
	}
}

func (l logical) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, ok1 := in[0].Data.([]bool)
	b, ok2 := in[1].Data.([]bool)
	if !ok1 || !ok2 {
		return nil, ops.InputErrorf("%s takes BOOL operands, got %v and %v", l.op, in[0].DType, in[1].DType)
	}
	shape, r, err := elem.MapFunc(c, a, b, in[0].Shape, in[1].Shape, l.f)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Bool, Shape: shape, Data: r}}, nil
}
