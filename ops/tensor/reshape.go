package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Reshape is the Reshape operator.
var Reshape = ops.Op{
	ops.Register(ops.Descriptor{Type: "Reshape", Since: 5, Fold: true}, buildReshape),
}

// ReshapeAttrs are Reshape's attributes.
type ReshapeAttrs struct {
	AllowZero bool `onnx:"allowzero"`
}

// reshape is a compiled Reshape: whether a 0 in the shape is a dimension
// of 0 (allowzero) rather than a copy of the input's.
type reshape struct{ allowZero bool }

func buildReshape(n *ops.Node, at *ReshapeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return reshape{allowZero: at.AllowZero}, nil
}

func (r reshape) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, s := in[0], in[1]
	spec, ok := s.Data.([]int64)
	if !ok || s.Rank() != 1 {
		return nil, ops.InputErrorf("the shape input must be a 1-D INT64 tensor, got %v%s", s.DType, tensor.ShapeString(s.Shape))
	}
	shape, err := reshapeTarget(x.Shape, spec, r.allowZero)
	if err != nil {
		return nil, err
	}
	t, err := x.Reshaped(shape)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	return []*tensor.Tensor{t}, nil
}

// reshapeTarget resolves ONNX Reshape's 0 (copy, unless allowZero) and -1
// (infer) entries against the input shape.
func reshapeTarget(in []int, spec []int64, allowZero bool) ([]int, error) {
	total, err := tensor.NumElements(in)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(spec))
	infer := -1
	known := 1
	for i, d := range spec {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, ops.InputErrorf("shape %v has more than one -1", spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, ops.InputErrorf("shape %v copies dimension %d of a rank-%d input", spec, i, len(in))
			}
			out[i] = in[i]
		case d < 0 || d > tensor.MaxElements:
			return nil, ops.InputErrorf("shape %v has invalid dimension %d", spec, d)
		default:
			out[i] = int(d)
		}
		if out[i] != 0 && known > tensor.MaxElements/out[i] {
			return nil, ops.InputErrorf("shape %v is too large", spec)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 {
			if total != 0 {
				return nil, ops.InputErrorf("cannot infer -1 in shape %v with a zero dimension", spec)
			}
			out[infer] = 0
		} else {
			if total%known != 0 {
				return nil, ops.InputErrorf("cannot reshape %s (%d elements) to %v", tensor.ShapeString(in), total, spec)
			}
			out[infer] = total / known
		}
	}
	return out, nil
}
