package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// NormAxis maps a possibly negative axis into [0, rank).
func NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, InputErrorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// SameType fails unless every non-nil tensor of ts has ts[0]'s type.
func SameType(op string, ts ...*tensor.Tensor) error {
	for _, t := range ts[1:] {
		if t != nil && t.DType != ts[0].DType {
			return InputErrorf("%s operands have types %v and %v", op, ts[0].DType, t.DType)
		}
	}
	return nil
}

// Optional returns in[i], or nil when the node has fewer inputs.
func Optional(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(in) {
		return in[i]
	}
	return nil
}

// ScalarInt reads a one-element integer tensor; what names it in the
// error.
func ScalarInt(t *tensor.Tensor, what string) (int64, error) {
	v, err := t.Int64s()
	if err != nil || len(v) != 1 {
		return 0, InputErrorf("%s must be one integer, got %v%s", what, t.DType, tensor.ShapeString(t.Shape))
	}
	return v[0], nil
}

// Unary returns an operator of one input and one output computing f.
func Unary(f func(x *tensor.Tensor) (*tensor.Tensor, error)) Func {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		t, err := f(in[0])
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}
}
