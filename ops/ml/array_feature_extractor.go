package ml

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "ArrayFeatureExtractor", Since: 1, Fold: true}, buildArrayFeatureExtractor)
}

// arrayFeatureExtractor is a compiled ArrayFeatureExtractor: it picks
// elements of X's last dimension by index.
type arrayFeatureExtractor struct{}

func buildArrayFeatureExtractor(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := arity(n, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	return arrayFeatureExtractor{}, nil
}

func (arrayFeatureExtractor) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, y := in[0], in[1]
	if y.DType != tensor.Int64 {
		return nil, ops.InputErrorf("ArrayFeatureExtractor takes INT64 indices, got %v", y.DType)
	}
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("ArrayFeatureExtractor takes X of rank 1 or more")
	}
	d := x.Shape[x.Rank()-1]
	ids := y.Data.([]int64)
	for _, i := range ids {
		if i < 0 || i >= int64(d) {
			return nil, ops.InputErrorf("ArrayFeatureExtractor: index %d is out of range for a last dimension of %d", i, d)
		}
	}
	shape := append(slices.Clone(x.Shape[:x.Rank()-1]), len(ids))
	if x.Rank() == 1 {
		shape = []int{1, len(ids)}
	}
	if err := outputShape("ArrayFeatureExtractor", shape...); err != nil {
		return nil, err
	}
	rows := 1
	for _, s := range x.Shape[:x.Rank()-1] {
		rows *= s // the leading dimensions of a valid tensor: no overflow
	}
	idx := make([]int, 0, rows*len(ids))
	for r := range rows * min(len(ids), 1) {
		for _, i := range ids {
			idx = append(idx, r*d+int(i))
		}
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: shape, Data: take(x.Data, idx)}}, nil
}
