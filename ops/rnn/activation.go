package rnn

import (
	"math"
	"strings"

	"github.com/quantserve/quantserve/ops"
)

// defaultActivations are each cell's activation functions for one
// direction when the node names none.
var defaultActivations = map[cellKind][]string{
	cellRNN:  {"Tanh"},
	cellGRU:  {"Sigmoid", "Tanh"},
	cellLSTM: {"Sigmoid", "Tanh", "Tanh"},
}

// activation returns the scalar function an RNN activation name denotes,
// taking alpha/beta from the lists as ONNX specifies (in order, for the
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
	case "tanh":
		return func(x float32) float32 { return float32(math.Tanh(float64(x))) }, nil
	case "sigmoid":
		return func(x float32) float32 { return float32(ops.Sigmoid(float64(x))) }, nil
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
