package text

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "StringConcat", Since: 20, Fold: true}, buildStringConcat)
}

// stringConcat joins its two string inputs elementwise, with numpy
// broadcasting.
type stringConcat struct{}

func buildStringConcat(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return stringConcat{}, nil
}

func (stringConcat) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, err := stringsOf(in[0], "StringConcat")
	if err != nil {
		return nil, err
	}
	b, err := stringsOf(in[1], "StringConcat")
	if err != nil {
		return nil, err
	}
	shape, out, err := ops.BinaryMap(a, b, in[0].Shape, in[1].Shape, func(x, y string) string { return x + y })
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{tensor.From(shape, out)}, nil
}
