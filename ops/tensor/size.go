package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Size", Since: 1, Fold: true}, buildSize)
}

// sizeOf is a compiled Size: its input's element count, an INT64 scalar.
type sizeOf struct{}

func buildSize(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return sizeOf{}, nil
}

func (sizeOf) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return []*tensor.Tensor{tensor.Scalar(int64(in[0].Len()))}, nil
}
