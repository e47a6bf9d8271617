package rnn

import "github.com/quantserve/quantserve/ops"

func init() {
	ops.Register(ops.Descriptor{Type: "RNN", Since: 7, Fold: true}, buildRNN)
}

// RNNAttrs are RNN's attributes.
type RNNAttrs struct{ RecurrentAttrs }

// rnnCell is the simple recurrence H = f(X·Wᵀ + H·Rᵀ + Wb + Rb), one gate
// and one activation (Tanh by default) per direction.
var rnnCell = cellSpec{kind: cellRNN, gates: 1, acts: 1}

func buildRNN(n *ops.Node, at *RNNAttrs) (ops.Operator, error) {
	return buildRecurrent(n, rnnCell, &at.RecurrentAttrs)
}
