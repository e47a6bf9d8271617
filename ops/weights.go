package ops

// MinQuantizedWeights is the smallest weight (K·N) quantized: below it the
// product is too small for int8 to pay for quantizing activations.
const MinQuantizedWeights = 4096

// LayerRecorder is implemented by a graph compiler's record of a node
// (Node.Host) that reports the products of its model.
type LayerRecorder interface {
	AddLayer(k, cols int, kernels string)
}

// AddLayer tells the graph compiler that the operator being built runs a
// product with a constant weight (k rows of cols) it packed at load, on
// the kernels named ("int8 per_channel", "float32", ...): the model's
// Layers report it. Without a compiler that listens (Host nil) it does
// nothing.
func (n *Node) AddLayer(k, cols int, kernels string) {
	if r, ok := n.Host.(LayerRecorder); ok {
		r.AddLayer(k, cols, kernels)
	}
}
