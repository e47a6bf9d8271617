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
}

// fusedAttention is quantserve.Attention, the node the attention rewrite
// writes for multi-head self-attention spelled with Reshape, Transpose,
// MatMul and Softmax: ai.onnx Attention's rank-3 form on Q, K and V
// [batch, seq, heads·head_size], each head's scores scaled and
// normalized, the output [batch, seq, heads·head_size].
type fusedAttention struct {
	attention       *attentionOp
	heads, headSize int64
}

func buildFusedAttention(n *ops.Node, at *FusedAttentionAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if at.Heads <= 0 || at.HeadSize <= 0 {
		return nil, fmt.Errorf("num_heads %d and head_size %d must be positive", at.Heads, at.HeadSize)
	}
	scale := at.Scale
	a, err := buildAttention(n, &AttentionAttrs{QNumHeads: at.Heads, KVNumHeads: at.Heads, Scale: &scale}, 3)
	if err != nil {
		return nil, err
	}
	return &fusedAttention{attention: a, heads: at.Heads, headSize: at.HeadSize}, nil
}

func (op *fusedAttention) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	width := int(op.heads * op.headSize)
	for _, x := range in[:3] {
		// what the graph's Reshape to [0, 0, H, D] takes
		if x.Rank() != 3 || x.Shape[2] != width {
			return nil, ops.InputErrorf("Attention of %d heads of %d takes [batch, seq, %d], got %s", op.heads, op.headSize, width, tensor.ShapeString(x.Shape))
		}
	}
	return op.attention.Run(c, in)
}
