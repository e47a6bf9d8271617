package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// The loss operators exported training graphs keep:
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12 on; the
// later versions only widen the types). Input is (N, C, d1, ..., dk),
// target (N, d1, ..., dk) holds class indices, weight (C) optionally
// weighs the classes; targets equal to ignore_index add nothing, not even
// to the weight a mean divides by. Computed in float64.

func init() {
	register(Descriptor{Type: "NegativeLogLikelihoodLoss", Since: 12, Fold: true}, buildNLLLoss)
	register(Descriptor{Type: "SoftmaxCrossEntropyLoss", Since: 12, Fold: true}, buildSCELoss)
}

// LossAttrs are the attributes of NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss.
type LossAttrs struct {
	IgnoreIndex *int64 `onnx:"ignore_index"`
	Reduction   string `onnx:"reduction" default:"mean"`
}

func checkLossReduction(r string) error {
	switch r {
	case "none", "sum", "mean":
		return nil
	}
	return fmt.Errorf("reduction %q is not one of none, sum, mean", r)
}

func buildNLLLoss(n *node, at *LossAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 2); err != nil {
		return nil, err
	}
	if err := checkLossReduction(at.Reduction); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var w *tensor.Tensor
		if len(in) > 2 {
			w = in[2]
		}
		lg, err := newLossGeom("NegativeLogLikelihoodLoss", in[0], in[1], w)
		if err != nil {
			return nil, err
		}
		loss, err := lg.loss(in[0].Float64s(), at)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{loss}, nil
	}, nil
}

func buildSCELoss(n *node, at *LossAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 2); err != nil {
		return nil, err
	}
	if err := requireInputs(n, 2); err != nil {
		return nil, err
	}
	if err := checkLossReduction(at.Reduction); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var w *tensor.Tensor
		if len(in) > 2 {
			w = in[2]
		}
		lg, err := newLossGeom("SoftmaxCrossEntropyLoss", x, in[1], w)
		if err != nil {
			return nil, err
		}
		logp := x.Float64s()
		logSoftmaxAxis1(logp, lg.n, lg.c, lg.d)
		loss, err := lg.loss(logp, at)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{loss, {DType: x.DType, Shape: x.Shape, Data: roundFloat64s(logp, x.DType)}}, nil
	}, nil
}

// lossGeom is a loss's input viewed as (N, C, D) with D = d1·…·dk.
type lossGeom struct {
	n, c, d int
	dtype   tensor.DataType
	target  []int64
	tshape  []int
	weight  []float64 // nil: every class weighs 1
}

func newLossGeom(op string, x, target, weight *tensor.Tensor) (*lossGeom, error) {
	if !x.DType.IsFloat() {
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	if x.Rank() < 2 {
		return nil, inputErrorf("%s needs an input of shape (N, C, ...), got %s", op, tensor.ShapeString(x.Shape))
	}
	if target.DType != tensor.Int64 && target.DType != tensor.Int32 {
		return nil, inputErrorf("%s takes INT32 or INT64 targets, got %v", op, target.DType)
	}
	want := append([]int{x.Shape[0]}, x.Shape[2:]...)
	if !equalShape(target.Shape, want) {
		return nil, inputErrorf("%s: target of shape %s for an input of shape %s (want %s)", op, tensor.ShapeString(target.Shape), tensor.ShapeString(x.Shape), tensor.ShapeString(want))
	}
	t, _ := target.Int64s()
	lg := &lossGeom{n: x.Shape[0], c: x.Shape[1], d: 1, dtype: x.DType, target: t, tshape: target.Shape}
	for _, v := range x.Shape[2:] {
		lg.d *= v
	}
	if weight != nil {
		if weight.DType != x.DType || weight.Rank() != 1 || weight.Shape[0] != lg.c {
			return nil, inputErrorf("%s: weight must be a 1-D %v tensor of %d classes, got %v%s", op, x.DType, lg.c, weight.DType, tensor.ShapeString(weight.Shape))
		}
		lg.weight = weight.Float64s()
	}
	return lg, nil
}

// loss returns the loss given the log-probabilities lp (N, C, D).
func (lg *lossGeom) loss(lp []float64, at *LossAttrs) (*tensor.Tensor, error) {
	per := make([]float64, lg.n*lg.d)
	var sum, wsum float64
	for i := 0; i < lg.n; i++ {
		for j := 0; j < lg.d; j++ {
			t := lg.target[i*lg.d+j]
			if at.IgnoreIndex != nil && t == *at.IgnoreIndex {
				continue
			}
			if t < 0 || t >= int64(lg.c) {
				return nil, inputErrorf("target %d is not a class index in [0, %d)", t, lg.c)
			}
			w := 1.0
			if lg.weight != nil {
				w = lg.weight[t]
			}
			l := -lp[(i*lg.c+int(t))*lg.d+j] * w
			per[i*lg.d+j] = l
			sum += l
			wsum += w
		}
	}
	switch at.Reduction {
	case "none":
		return &tensor.Tensor{DType: lg.dtype, Shape: lg.tshape, Data: roundFloat64s(per, lg.dtype)}, nil
	case "sum":
		return &tensor.Tensor{DType: lg.dtype, Data: roundFloat64s([]float64{sum}, lg.dtype)}, nil
	}
	return &tensor.Tensor{DType: lg.dtype, Data: roundFloat64s([]float64{sum / wsum}, lg.dtype)}, nil
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

// roundFloat64s returns float64 values as a slice of the floating-point
// type dt, rounded once.
func roundFloat64s(v []float64, dt tensor.DataType) any {
	switch dt {
	case tensor.Float32:
		return convert[float32](v)
	case tensor.Float16:
		h := make([]tensor.F16, len(v))
		for i, x := range v {
			h[i] = tensor.F16FromFloat64(x)
		}
		return h
	case tensor.BFloat16:
		h := make([]tensor.BF16, len(v))
		for i, x := range v {
			h[i] = tensor.BF16FromFloat64(x)
		}
		return h
	}
	return v
}
