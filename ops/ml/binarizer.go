package ml

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "Binarizer", Since: 1, Fold: true}, buildBinarizer)
}

// BinarizerAttrs are Binarizer's attributes.
type BinarizerAttrs struct {
	Threshold float32 `onnx:"threshold" default:"0"`
}

// binarizer is a compiled Binarizer: 1 above the threshold, else 0.
type binarizer struct{ th float64 }

func buildBinarizer(n *ops.Node, a *BinarizerAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	return binarizer{th: float64(a.Threshold)}, nil
}

func (b binarizer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !slices.Contains(numeric, x.DType) {
		return nil, ops.InputErrorf("Binarizer does not take %v input", x.DType)
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		out = binarize(d, b.th)
	case []float64:
		out = binarize(d, b.th)
	case []int64:
		out = binarize(d, b.th)
	case []int32:
		out = binarize(d, b.th)
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

func binarize[T float32 | float64 | int64 | int32](x []T, th float64) []T {
	y := make([]T, len(x))
	for i, v := range x {
		if float64(v) > th {
			y[i] = 1
		}
	}
	return y
}
