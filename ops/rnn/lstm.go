package rnn

import "github.com/quantserve/quantserve/ops"

func init() {
	ops.Register(ops.Descriptor{Type: "LSTM", Since: 7, Fold: true}, buildLSTM)
}

// LSTMAttrs are LSTM's attributes.
type LSTMAttrs struct {
	RecurrentAttrs
	InputForget bool `onnx:"input_forget"`
}

// buildLSTM compiles an LSTM: gates i, o, f and c (W and R hold them in
// that order), activations f (Sigmoid), g and h (Tanh) per direction, the
// optional peepholes P (i, o, f) and the cell state initial_c and Y_c;
// input_forget couples the forget gate to the input gate (f = 1 - i).
func buildLSTM(n *ops.Node, at *LSTMAttrs) (ops.Operator, error) {
	return buildRecurrent(n, cellSpec{kind: cellLSTM, gates: 4, acts: 3, inputForget: at.InputForget}, &at.RecurrentAttrs)
}
