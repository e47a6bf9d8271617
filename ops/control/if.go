package control

import (
	"fmt"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "If", Since: 1}, buildIf)
}

// IfAttrs are If's attributes: the branches.
type IfAttrs struct {
	Then *onnxpb.Graph `onnx:"then_branch"`
	Else *onnxpb.Graph `onnx:"else_branch"`
}

// ifOp is a compiled If: the branch its BOOL condition picks runs on the
// node's inputs and gives the node's outputs.
type ifOp struct {
	then, els ops.Graph
}

func buildIf(n *ops.Node, at *IfAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1<<16); err != nil {
		return nil, err
	}
	then, err := n.Graph(at.Then)
	if err != nil {
		return nil, fmt.Errorf("then_branch: %w", err)
	}
	els, err := n.Graph(at.Else)
	if err != nil {
		return nil, fmt.Errorf("else_branch: %w", err)
	}
	for _, g := range []ops.Graph{then, els} {
		if len(g.Outputs()) != len(n.Outputs) {
			return nil, fmt.Errorf("a branch has %d outputs, the node %d", len(g.Outputs()), len(n.Outputs))
		}
	}
	return &ifOp{then: then, els: els}, nil
}

func (op *ifOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	cond, ok := in[0].Data.([]bool)
	if !ok || len(cond) != 1 {
		return nil, ops.InputErrorf("If takes a BOOL condition with one element, got %v%s", in[0].DType, tensor.ShapeString(in[0].Shape))
	}
	if cond[0] {
		return op.then.Run(c, in, nil)
	}
	return op.els.Run(c, in, nil)
}
