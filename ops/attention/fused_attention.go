package attention

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// quantserve is the domain of the nodes the graph compiler's rewrites
	// write; a model may not import it.
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "Attention", Since: 1, Fold: true}, buildFusedAttention)
}

// FusedAttentionAttrs are quantserve.Attention's attributes.
type FusedAttentionAttrs struct {
	Heads    int64   `onnx:"num_heads"`
	HeadSize int64   `onnx:"head_size"`
	Scale    float32 `onnx:"scale" default:"1"`
	// Packed says Q, K and V are the three column blocks, in that order,
	// of one input [batch, seq, 3·heads·head_size] (the "qkv" rewrite's
	// one product of the three projections), read by its row stride.
	Packed bool `onnx:"packed"`
}

// fusedAttention is quantserve.Attention, the node the attention rewrite
// writes for multi-head self-attention spelled with Reshape, Transpose,
// MatMul and Softmax: ai.onnx Attention's rank-3 form on Q, K and V
// [batch, seq, heads·head_size], each head's scores scaled and
// normalized, the output [batch, seq, heads·head_size].
type fusedAttention struct {
	attention       *attentionOp
	heads, headSize int64
	packed          bool
}

func buildFusedAttention(n *ops.Node, at *FusedAttentionAttrs) (ops.Operator, error) {
	inputs := 3
	if at.Packed {
		inputs = 1
	}
	if err := n.CheckArity(inputs, inputs, 1, 1); err != nil {
		return nil, err
	}
	if at.Heads <= 0 || at.HeadSize <= 0 {
		return nil, fmt.Errorf("num_heads %d and head_size %d must be positive", at.Heads, at.HeadSize)
	}
	scale := at.Scale
	a := &attentionOp{at: &AttentionAttrs{QNumHeads: at.Heads, KVNumHeads: at.Heads, Scale: &scale}}
	return &fusedAttention{attention: a, heads: at.Heads, headSize: at.HeadSize, packed: at.Packed}, nil
}

func (op *fusedAttention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	width := int(op.heads * op.headSize)
	if op.packed {
		x := in[0]
		if x.Rank() != 3 || x.Shape[2] != 3*width {
			return nil, ops.InputErrorf("Attention of %d heads of %d on packed Q, K and V takes [batch, seq, %d], got %s", op.heads, op.headSize, 3*width, tensor.ShapeString(x.Shape))
		}
		// Each block is viewed as a tensor of its own shape over the
		// packed values: the call reads them by the packed row stride.
		view := &tensor.Tensor{DType: x.DType, Shape: []int{x.Shape[0], x.Shape[1], width}, Data: x.Data}
		return op.attention.run(c, []*tensor.Tensor{view, view, view}, 3*width)
	}
	for _, x := range in[:3] {
		// what the graph's Reshape to [0, 0, H, D] takes
		if x.Rank() != 3 || x.Shape[2] != width {
			return nil, ops.InputErrorf("Attention of %d heads of %d takes [batch, seq, %d], got %s", op.heads, op.headSize, width, tensor.ShapeString(x.Shape))
		}
	}
	return op.attention.Run(c, in)
}
