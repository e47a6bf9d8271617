package attention

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestCancelled: every operator of the package stops with the request's
// error once its context is cancelled (inputs large enough for more than
// ops.TickEvery units of work).
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	zeros := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, ops.ProdInts(shape))) }
	x4 := zeros(1, 4, 64, 16)
	x4d := to64(x4)
	for _, tc := range []struct {
		n  opstest.Node
		in []*tensor.Tensor
	}{
		{attentionNode(&AttentionAttrs{}), []*tensor.Tensor{x4, x4, x4}},
		{attentionNode(&AttentionAttrs{IsCausal: true}), []*tensor.Tensor{x4d, x4d, x4d}},
		{flexNode(nil, nil), []*tensor.Tensor{x4, x4, x4}},
		{fusedNode(4, 16, 1), []*tensor.Tensor{zeros(1, 64, 64), zeros(1, 64, 64), zeros(1, 64, 64)}},
		{opstest.Node{Op: "RotaryEmbedding", Opset: 23}, []*tensor.Tensor{zeros(1, 4, 4096, 16), zeros(1, 4096, 8), zeros(1, 4096, 8)}},
		{linearAttentionNode(4, 2, "linear", 0), []*tensor.Tensor{zeros(1, 64, 64), zeros(1, 64, 32), zeros(1, 64, 32)}},
		{opstest.Node{Op: "CausalConvWithState", Opset: 27, Outputs: 2, Attrs: []*onnxpb.Attribute{attrStr("activation", "none")}},
			[]*tensor.Tensor{zeros(1, 64, 4096), zeros(64, 1, 4)}},
	} {
		op := compile(t, tc.n, len(tc.in))
		if _, err := op.Run(c, tc.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want the context's error", tc.n.Op, err)
		}
		// and the same node answers under a live context
		if _, err := op.Run(background(nil), tc.in); err != nil {
			t.Errorf("%s: %v", tc.n.Op, err)
		}
	}
}
