package rnn

import (
	"math"
	"strings"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
)

// defaultActivations are each cell's activation functions for one
// direction when the node names none.
var defaultActivations = map[cellKind][]string{
	cellRNN:  {"Tanh"},
	cellGRU:  {"Sigmoid", "Tanh"},
	cellLSTM: {"Sigmoid", "Tanh", "Tanh"},
}

// gateAct is one of a cell's activation functions, applied to a gate's
// values at a time: Sigmoid and Tanh on the engine's table's kernels,
// the others a value at a time.
type gateAct struct {
	table func(*dispatch.Table) func(dst, src []float32) // nil: one
	one   func(float32) float32
}

// on returns a's function of slices on t's kernels: dst[j] = a(src[j])
// for j < len(src); dst may be src.
func (a gateAct) on(t *dispatch.Table) func(dst, src []float32) {
	if a.table != nil {
		return a.table(t)
	}
	f := a.one
	return func(dst, src []float32) {
		dst = dst[:len(src)]
		for j, v := range src {
			dst[j] = f(v)
		}
	}
}

// gateActivation returns the activation an RNN activation name denotes
// (see activation): the default Sigmoid and Tanh on the table's kernels.
func gateActivation(name string, alphas, betas *[]float32) (gateAct, error) {
	switch strings.ToLower(name) {
	case "sigmoid":
		return gateAct{table: func(t *dispatch.Table) func(dst, src []float32) { return t.Sigmoid }}, nil
	case "tanh":
		return gateAct{table: func(t *dispatch.Table) func(dst, src []float32) { return t.Tanh }}, nil
	}
	f, err := activation(name, alphas, betas)
	return gateAct{one: f}, err
}

// activation returns the scalar function an RNN activation name other
// than Sigmoid and Tanh denotes, taking alpha/beta from the lists as ONNX specifies (in order, for the
// functions that have them).
func activation(name string, alphas, betas *[]float32) (func(float32) float32, error) {
	take := func(list *[]float32, def float32) float32 {
		if len(*list) == 0 {
			return def
		}
		v := (*list)[0]
		*list = (*list)[1:]
		return v
	}
	switch strings.ToLower(name) {
	case "relu":
		return func(x float32) float32 { return max(x, 0) }, nil
	case "affine":
		a, b := take(alphas, 1), take(betas, 0)
		return func(x float32) float32 { return a*x + b }, nil
	case "leakyrelu":
		a := take(alphas, 0.01)
		return func(x float32) float32 {
			if x < 0 {
				return a * x
			}
			return x
		}, nil
	case "thresholdedrelu":
		a := take(alphas, 1)
		return func(x float32) float32 {
			if x > a {
				return x
			}
			return 0
		}, nil
	case "scaledtanh":
		a, b := take(alphas, 1), take(betas, 1)
		return func(x float32) float32 { return a * float32(math.Tanh(float64(b*x))) }, nil
	case "hardsigmoid":
		a, b := take(alphas, 0.2), take(betas, 0.5)
		return func(x float32) float32 { return min(max(a*x+b, 0), 1) }, nil
	case "elu":
		a := take(alphas, 1)
		return func(x float32) float32 {
			if x < 0 {
				return a * float32(math.Expm1(float64(x)))
			}
			return x
		}, nil
	case "softsign":
		return func(x float32) float32 { return x / (1 + float32(math.Abs(float64(x)))) }, nil
	case "softplus":
		return func(x float32) float32 { return float32(math.Log1p(math.Exp(float64(x)))) }, nil
	}
	return nil, ops.Unsupportedf("recurrent activation %q", name)
}
