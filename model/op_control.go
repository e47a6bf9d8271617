package model

import (
	"context"
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Control flow: operators whose attributes are graphs, compiled once at
// load like the main graph, reading values of the graphs around them.

func init() {
	register(Descriptor{Type: "If", Since: 1}, buildIf)
}

// IfAttrs are If's attributes: the branches.
type IfAttrs struct {
	Then *onnxpb.Graph `onnx:"then_branch"`
	Else *onnxpb.Graph `onnx:"else_branch"`
}

func buildIf(n *node, at *IfAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1<<16); err != nil {
		return nil, err
	}
	then, err := n.subgraph(at.Then)
	if err != nil {
		return nil, fmt.Errorf("then_branch: %w", err)
	}
	els, err := n.subgraph(at.Else)
	if err != nil {
		return nil, fmt.Errorf("else_branch: %w", err)
	}
	for _, g := range []*subgraph{then, els} {
		if len(g.outs) != len(n.pb.Outputs) {
			return nil, fmt.Errorf("a branch has %d outputs, the node %d", len(g.outs), len(n.pb.Outputs))
		}
	}
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		c, ok := in[0].Data.([]bool)
		if !ok || len(c) != 1 {
			return nil, inputErrorf("If takes a BOOL condition with one element, got %v%s", in[0].DType, tensor.ShapeString(in[0].Shape))
		}
		if c[0] {
			return then.call(ctx, in, nil)
		}
		return els.call(ctx, in, nil)
	}
	return nil, nil
}
