package loss

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "SoftmaxCrossEntropyLoss", Since: 12, Fold: true}, buildSoftmaxCrossEntropyLoss)
}

// softmaxCrossEntropyLoss is a compiled SoftmaxCrossEntropyLoss: the
// negative log-likelihood of the log-softmax of its input over the
// classes.
type softmaxCrossEntropyLoss struct{ r reduction }

func buildSoftmaxCrossEntropyLoss(n *ops.Node, at *Attrs) (ops.Operator, error) {
	r, err := compile(n, at, 2)
	if err != nil {
		return nil, err
	}
	return softmaxCrossEntropyLoss{r: r}, nil
}

// Run takes the scores, the target and an optional weight, and returns
// the loss and the log-probabilities.
func (op softmaxCrossEntropyLoss) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	g, err := newGeom("SoftmaxCrossEntropyLoss", x, in[1], ops.Optional(in, 2))
	if err != nil {
		return nil, err
	}
	logp := x.Float64s()
	logSoftmaxAxis1(logp, g.n, g.c, g.d)
	loss, err := g.loss(logp, op.r)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{loss, {DType: x.DType, Shape: x.Shape, Data: ops.RoundFloat64s(logp, x.DType)}}, nil
}

// logSumExpShift is max + log Σ exp(x - max) over x[off + k·stride],
// k < count.
func logSumExpShift(x []float64, off, count, stride int) float64 {
	m := math.Inf(-1)
	for k := 0; k < count; k++ {
		m = math.Max(m, x[off+k*stride])
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m
	}
	var s float64
	for k := 0; k < count; k++ {
		s += math.Exp(x[off+k*stride] - m)
	}
	return m + math.Log(s)
}

// logSoftmaxAxis1 replaces x (N, C, D) by its log-softmax over C.
func logSoftmaxAxis1(x []float64, n, c, d int) {
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			off := i*c*d + j
			lse := logSumExpShift(x, off, c, d)
			for k := 0; k < c; k++ {
				x[off+k*d] -= lse
			}
		}
	}
}
