package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "FeatureVectorizer", Since: 1, Fold: true}, buildFeatureVectorizer)
}

// FeatureVectorizerAttrs are FeatureVectorizer's attributes.
type FeatureVectorizerAttrs struct {
	InputDimensions []int64 `onnx:"inputdimensions"`
}

// featureVectorizer is a compiled FeatureVectorizer: the columns each
// input takes in the output (cut or padded with zeros), total in all.
type featureVectorizer struct {
	dims  []int
	total int
}

func buildFeatureVectorizer(n *ops.Node, a *FeatureVectorizerAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1<<20, 1, 1); err != nil {
		return nil, err
	}
	if len(a.InputDimensions) != len(n.Inputs) {
		return nil, fmt.Errorf("has %d inputs and %d inputdimensions", len(n.Inputs), len(a.InputDimensions))
	}
	fv := &featureVectorizer{dims: make([]int, len(a.InputDimensions))}
	for i, d := range a.InputDimensions {
		if d < 0 || d > tensor.MaxElements || fv.total+int(d) > tensor.MaxElements {
			return nil, fmt.Errorf("inputdimensions %v are out of range", a.InputDimensions)
		}
		fv.dims[i] = int(d)
		fv.total += int(d)
	}
	return fv, nil
}

func (fv *featureVectorizer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	rows, total := -1, fv.total
	vals := make([][]float64, len(in))
	cols := make([]int, len(in))
	for i, x := range in {
		v, r, f, err := readRows("FeatureVectorizer", x, numeric...)
		if err != nil {
			return nil, err
		}
		if rows >= 0 && r != rows {
			return nil, ops.InputErrorf("FeatureVectorizer: inputs have %d and %d rows", rows, r)
		}
		rows, vals[i], cols[i] = r, v, f
	}
	if err := outputShape("FeatureVectorizer", rows, total); err != nil {
		return nil, err
	}
	y := make([]float32, rows*total)
	for r := range rows {
		off := r * total
		for i, v := range vals {
			d := fv.dims[i]
			for j := range min(d, cols[i]) {
				y[off+j] = float32(v[r*cols[i]+j])
			}
			off += d
		}
	}
	return []*tensor.Tensor{tensor.From([]int{rows, total}, y)}, nil
}
