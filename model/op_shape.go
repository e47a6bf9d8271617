package model

import (
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	registry["Identity"] = buildIdentity
	registry["Flatten"] = buildFlatten
	registry["Reshape"] = buildReshape
	registry["Constant"] = buildConstant
}

func buildIdentity(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{in[0]}, nil
	}, nil
}

func buildFlatten(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("axis"); err != nil {
		return nil, err
	}
	axis, err := n.intAttr("axis", 1)
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		r := int64(x.Rank())
		a := axis
		if a < -r || a > r {
			return nil, inputErrorf("axis %d is out of range for rank %d", axis, r)
		}
		if a < 0 {
			a += r
		}
		outer := 1
		for _, d := range x.Shape[:a] {
			outer *= d
		}
		inner := 1
		for _, d := range x.Shape[a:] {
			inner *= d
		}
		t, err := x.Reshaped([]int{outer, inner})
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func buildReshape(n *node) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("allowzero"); err != nil {
		return nil, err
	}
	allowZero, err := n.intAttr("allowzero", 0)
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, s := in[0], in[1]
		spec, ok := s.Data.([]int64)
		if !ok || s.Rank() != 1 {
			return nil, inputErrorf("the shape input must be a 1-D INT64 tensor, got %v%s", s.DType, tensor.ShapeString(s.Shape))
		}
		shape, err := reshapeTarget(x.Shape, spec, allowZero != 0)
		if err != nil {
			return nil, err
		}
		t, err := x.Reshaped(shape)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		return []*tensor.Tensor{t}, nil
	}, nil
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
				return nil, inputErrorf("shape %v has more than one -1", spec)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, inputErrorf("shape %v copies dimension %d of a rank-%d input", spec, i, len(in))
			}
			out[i] = in[i]
		case d < 0 || d > tensor.MaxElements:
			return nil, inputErrorf("shape %v has invalid dimension %d", spec, d)
		default:
			out[i] = int(d)
		}
		if out[i] != 0 && known > tensor.MaxElements/out[i] {
			return nil, inputErrorf("shape %v is too large", spec)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 {
			if total != 0 {
				return nil, inputErrorf("cannot infer -1 in shape %v with a zero dimension", spec)
			}
			out[infer] = 0
		} else {
			if total%known != 0 {
				return nil, inputErrorf("cannot reshape %s (%d elements) to %v", tensor.ShapeString(in), total, spec)
			}
			out[infer] = total / known
		}
	}
	return out, nil
}

func buildConstant(n *node) (opFunc, error) {
	if err := n.checkArity(0, 0, 1, 1); err != nil {
		return nil, err
	}
	if len(n.attrs) != 1 {
		return nil, fmt.Errorf("needs exactly one value attribute, has %d", len(n.attrs))
	}
	var t *tensor.Tensor
	for name, a := range n.attrs {
		switch {
		case name == "value" && a.Type == onnxpb.AttrTensor && a.T != nil:
			var err error
			if t, err = TensorFromONNX(a.T); err != nil {
				return nil, err
			}
		case name == "value_float" && a.Type == onnxpb.AttrFloat:
			t = tensor.Scalar(a.F)
		case name == "value_floats" && a.Type == onnxpb.AttrFloats:
			t = tensor.From([]int{len(a.Floats)}, append([]float32(nil), a.Floats...))
		case name == "value_int" && a.Type == onnxpb.AttrInt:
			t = tensor.Scalar(a.I)
		case name == "value_ints" && a.Type == onnxpb.AttrInts:
			t = tensor.From([]int{len(a.Ints)}, append([]int64(nil), a.Ints...))
		default:
			return nil, unsupportedf("Constant attribute %q", name)
		}
	}
	return func([]*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{t}, nil
	}, nil
}
