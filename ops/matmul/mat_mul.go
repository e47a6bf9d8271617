package matmul

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// MatMul is the MatMul operator.
var MatMul = ops.Op{
	ops.Register(ops.Descriptor{Type: "MatMul", Since: 1, Fold: true}, buildMatMul),
}

// matMul is a compiled MatMul: numpy's matmul of its two inputs, or, when
// B is a constant 2-D float32 tensor, a Linear holding it.
type matMul struct {
	lin *Linear
}

func buildMatMul(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if b := n.Const(1); b != nil && b.DType == tensor.Float32 && b.Rank() == 2 {
		lin, err := NewLinear(n, 1, b, n.QDQInput(1))
		if err != nil {
			return nil, err
		}
		return &matMul{lin: lin}, nil
	}
	return &matMul{}, nil
}

// Weight returns the constant weight the kernels hold, or nil (Weighted).
func (m *matMul) Weight() *Linear { return m.lin }

func (m *matMul) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if m.lin != nil {
		return ops.Result(m.lin.Apply(c, in[0]))
	}
	return ops.Result(Product(c, "MatMul", in[0], in[1]))
}
