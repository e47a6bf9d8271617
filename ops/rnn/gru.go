package rnn

import "github.com/quantserve/quantserve/ops"

func init() {
	ops.Register(ops.Descriptor{Type: "GRU", Since: 7, Fold: true}, buildGRU)
}

// GRUAttrs are GRU's attributes.
type GRUAttrs struct {
	RecurrentAttrs
	LinearBeforeReset bool `onnx:"linear_before_reset"`
}

// buildGRU compiles a GRU: gates z, r and h (W and R hold them in that
// order), activations f (Sigmoid) and g (Tanh) per direction;
// linear_before_reset applies the reset gate after the recurrent product
// of the h gate rather than before it.
func buildGRU(n *ops.Node, at *GRUAttrs) (ops.Operator, error) {
	return buildRecurrent(n, cellSpec{kind: cellGRU, gates: 3, acts: 2, linearBeforeReset: at.LinearBeforeReset}, &at.RecurrentAttrs)
}
