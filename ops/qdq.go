package ops

// QDQWeight is a 2-D integer weight as a QDQ model stores it behind a
// DequantizeLinear of constants: its values less their zero points
// (Rows×Cols, row-major) and its scales, one for the tensor or one per
// index along Axis. The weight the model multiplies by is Q·scale.
type QDQWeight struct {
	Q          []int32
	Rows, Cols int
	Scales     []float32
	PerTensor  bool
	Axis       int // 0 or 1: the axis the scales run along, when not per tensor
}

// Transpose returns w's transpose (Cols×Rows), its scales running along
// the other axis: the weight Gemm's transB multiplies by.
func (w *QDQWeight) Transpose() *QDQWeight {
	t := &QDQWeight{Q: make([]int32, len(w.Q)), Rows: w.Cols, Cols: w.Rows, Scales: w.Scales, PerTensor: w.PerTensor, Axis: 1 - w.Axis}
	for i := 0; i < w.Rows; i++ {
		for j := 0; j < w.Cols; j++ {
			t.Q[j*w.Rows+i] = w.Q[i*w.Cols+j]
		}
	}
	return t
}

// QDQSource is implemented by an operator whose first output, computed
// from constants at load, is the dequantized form of integer weights
// (DequantizeLinear): the graph compiler hands them to the nodes that read
// that output (Node.QDQ), whose products may run on them as they are.
type QDQSource interface {
	// QDQWeight returns the integer weights, or nil when the output is
	// not one the int8 kernels take.
	QDQWeight() *QDQWeight
}

// QDQInput returns the integer weights behind input i (see Node.QDQ), or
// nil.
func (n *Node) QDQInput(i int) *QDQWeight {
	if i < 0 || i >= len(n.QDQ) {
		return nil
	}
	return n.QDQ[i]
}
