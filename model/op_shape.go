package model

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Identity", Since: 1, Fold: true}, buildIdentity)
	register(Descriptor{Type: "Flatten", Since: 1, Fold: true}, buildFlatten)
	register(Descriptor{Type: "Reshape", Since: 5, Fold: true}, buildReshape)
	register(Descriptor{Type: "Constant", Since: 1, Fold: true}, buildConstant)
	register(Descriptor{Type: "Transpose", Since: 1, Fold: true}, buildTranspose)
	register(Descriptor{Type: "Shape", Since: 1, Fold: true}, buildShape)
	register(Descriptor{Type: "Squeeze", Since: 1, Until: 12, Fold: true}, buildSqueeze)
	register(Descriptor{Type: "Squeeze", Since: 13, Fold: true}, buildSqueeze13)
	register(Descriptor{Type: "Unsqueeze", Since: 1, Until: 12, Fold: true}, buildUnsqueeze)
	register(Descriptor{Type: "Unsqueeze", Since: 13, Fold: true}, buildUnsqueeze13)
	register(Descriptor{Type: "Concat", Since: 1, Fold: true}, buildConcat)
}

// FlattenAttrs are Flatten's attributes.
type FlattenAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// ReshapeAttrs are Reshape's attributes.
type ReshapeAttrs struct {
	AllowZero bool `onnx:"allowzero"`
}

// ConstantAttrs are Constant's attributes: exactly one holds the value.
type ConstantAttrs struct {
	Value       *tensor.Tensor `onnx:"value"`
	ValueFloat  *float32       `onnx:"value_float"`
	ValueFloats []float32      `onnx:"value_floats"`
	ValueInt    *int64         `onnx:"value_int"`
	ValueInts   []int64        `onnx:"value_ints"`
	ValueString *string        `onnx:"value_string"`
	ValueStrs   []string       `onnx:"value_strings"`
}

// TransposeAttrs are Transpose's attributes.
type TransposeAttrs struct {
	Perm []int64 `onnx:"perm"` // nil: reverse the axes
}

// ShapeAttrs are Shape's attributes (opset 15 on).
type ShapeAttrs struct {
	Start int64 `onnx:"start"`
	End   int64 `onnx:"end" default:"9223372036854775807"`
}

// AxesAttrs are the attributes of Squeeze and Unsqueeze before opset 13.
type AxesAttrs struct {
	Axes []int64 `onnx:"axes"` // nil when absent
}

// ConcatAttrs are Concat's attributes.
type ConcatAttrs struct {
	Axis *int64 `onnx:"axis"`
}

func buildIdentity(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{in[0]}, nil
	}, nil
}

func buildFlatten(n *node, at *FlattenAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	axis := at.Axis
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

func buildReshape(n *node, at *ReshapeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	allowZero := at.AllowZero
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, s := in[0], in[1]
		spec, ok := s.Data.([]int64)
		if !ok || s.Rank() != 1 {
			return nil, inputErrorf("the shape input must be a 1-D INT64 tensor, got %v%s", s.DType, tensor.ShapeString(s.Shape))
		}
		shape, err := reshapeTarget(x.Shape, spec, allowZero)
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

func buildConstant(n *node, at *ConstantAttrs) (opFunc, error) {
	if err := n.checkArity(0, 0, 1, 1); err != nil {
		return nil, err
	}
	if len(n.attrs) != 1 {
		return nil, fmt.Errorf("needs exactly one value attribute, has %d", len(n.attrs))
	}
	var t *tensor.Tensor
	switch {
	case at.Value != nil:
		t = at.Value
	case at.ValueFloat != nil:
		t = tensor.Scalar(*at.ValueFloat)
	case at.ValueFloats != nil:
		t = tensor.From([]int{len(at.ValueFloats)}, at.ValueFloats)
	case at.ValueInt != nil:
		t = tensor.Scalar(*at.ValueInt)
	case at.ValueInts != nil:
		t = tensor.From([]int{len(at.ValueInts)}, at.ValueInts)
	case at.ValueString != nil:
		t = tensor.Scalar(*at.ValueString)
	case at.ValueStrs != nil:
		t = tensor.From([]int{len(at.ValueStrs)}, at.ValueStrs)
	}
	return func([]*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{t}, nil
	}, nil
}

func buildTranspose(n *node, at *TransposeAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	perm, hasPerm := at.Perm, at.Perm != nil
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		r := x.Rank()
		p := make([]int, r)
		if hasPerm {
			if len(perm) != r {
				return nil, inputErrorf("Transpose perm %v does not fit rank %d", perm, r)
			}
			seen := make([]bool, r)
			for i, v := range perm {
				if v < 0 || v >= int64(r) || seen[v] {
					return nil, inputErrorf("Transpose perm %v is not a permutation", perm)
				}
				seen[v] = true
				p[i] = int(v)
			}
		} else {
			for i := range p {
				p[i] = r - 1 - i
			}
		}
		return transpose(x, p), nil
	}), nil
}

// transpose returns x with its axes permuted: out axis i is x axis p[i].
// Axes that stay contiguous move as whole runs (copy()), so the head
// transposes of attention ([B,S,H,D] → [B,H,S,D]) copy rows of D.
func transpose(x *tensor.Tensor, p []int) *tensor.Tensor {
	rows := tensor.Strides(x.Shape)
	shape, strides := make([]int, len(p)), make([]int, len(p))
	for i, a := range p {
		shape[i], strides[i] = x.Shape[a], rows[a]
	}
	t, err := stridedView(x, shape, strides, 0)
	if err != nil {
		panic(err) // the same elements as x, which exists
	}
	return t
}

func buildShape(n *node, at *ShapeAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	start, end := at.Start, at.End
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		r := int64(x.Rank())
		clampAxis := func(v int64) int64 {
			if v < 0 {
				v += r
			}
			return min(max(v, 0), r)
		}
		s, e := clampAxis(start), clampAxis(end)
		dims := []int64{}
		for i := s; i < e; i++ {
			dims = append(dims, int64(x.Shape[i]))
		}
		return tensor.From([]int{len(dims)}, dims), nil
	}), nil
}

// axesInput returns the optional INT64 axes input of Squeeze/Unsqueeze
// (opset 13 on) and whether it is given.
func axesInput(in []*tensor.Tensor) ([]int64, bool, error) {
	if len(in) < 2 || in[1] == nil {
		return nil, false, nil
	}
	a, ok := in[1].Data.([]int64)
	if !ok {
		return nil, false, inputErrorf("axes must be INT64, got %v", in[1].DType)
	}
	return a, true, nil
}

// buildSqueeze implements Squeeze before opset 13: axes as an attribute.
func buildSqueeze(n *node, at *AxesAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return squeeze(x, at.Axes, at.Axes != nil) }), nil
}

// buildSqueeze13 implements Squeeze from opset 13: axes as an input.
func buildSqueeze13(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		axes, given, err := axesInput(in)
		if err != nil {
			return nil, err
		}
		t, err := squeeze(in[0], axes, given)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

// squeeze drops the given axes of x (each of size 1), or every axis of
// size 1 when none are given.
func squeeze(x *tensor.Tensor, axes []int64, given bool) (*tensor.Tensor, error) {
	{
		drop := make([]bool, x.Rank())
		if !given {
			for i, d := range x.Shape {
				drop[i] = d == 1
			}
		}
		for _, ax := range axes {
			a, err := normAxis(ax, x.Rank())
			if err != nil {
				return nil, err
			}
			if x.Shape[a] != 1 {
				return nil, inputErrorf("Squeeze axis %d has size %d, not 1", ax, x.Shape[a])
			}
			drop[a] = true
		}
		var shape []int
		for i, d := range x.Shape {
			if !drop[i] {
				shape = append(shape, d)
			}
		}
		return x.Reshaped(shape)
	}
}

// buildUnsqueeze implements Unsqueeze before opset 13: axes as an attribute.
func buildUnsqueeze(n *node, at *AxesAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return unsqueeze(x, at.Axes, at.Axes != nil) }), nil
}

// buildUnsqueeze13 implements Unsqueeze from opset 13: axes as an input.
func buildUnsqueeze13(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		axes, given, err := axesInput(in)
		if err != nil {
			return nil, err
		}
		t, err := unsqueeze(in[0], axes, given)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

// unsqueeze inserts axes of size 1 at the given output positions.
func unsqueeze(x *tensor.Tensor, axes []int64, given bool) (*tensor.Tensor, error) {
	{
		if !given {
			return nil, inputErrorf("Unsqueeze needs axes")
		}
		r := x.Rank() + len(axes)
		insert := make([]bool, r)
		for _, ax := range axes {
			a, err := normAxis(ax, r)
			if err != nil {
				return nil, err
			}
			if insert[a] {
				return nil, inputErrorf("Unsqueeze axes %v repeat an axis", axes)
			}
			insert[a] = true
		}
		shape := make([]int, 0, r)
		j := 0
		for i := 0; i < r; i++ {
			if insert[i] {
				shape = append(shape, 1)
			} else {
				shape = append(shape, x.Shape[j])
				j++
			}
		}
		return x.Reshaped(shape)
	}
}

func buildConcat(n *node, at *ConcatAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1<<16, 1, 1); err != nil {
		return nil, err
	}
	if at.Axis == nil {
		return nil, fmt.Errorf("Concat needs the axis attribute")
	}
	axis := *at.Axis
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		first := in[0]
		a, err := normAxis(axis, first.Rank())
		if err != nil {
			return nil, err
		}
		shape := slices.Clone(first.Shape)
		shape[a] = 0
		for _, t := range in {
			if t.DType != first.DType || t.Rank() != first.Rank() {
				return nil, inputErrorf("Concat inputs differ in type or rank: %v%s and %v%s", first.DType, tensor.ShapeString(first.Shape), t.DType, tensor.ShapeString(t.Shape))
			}
			for i, d := range t.Shape {
				if i != a && d != first.Shape[i] {
					return nil, inputErrorf("Concat inputs differ off axis %d: %s and %s", a, tensor.ShapeString(first.Shape), tensor.ShapeString(t.Shape))
				}
			}
			shape[a] += t.Shape[a]
		}
		total, err := tensor.NumElements(shape)
		if err != nil {
			return nil, inputErrorf("Concat: %v", err)
		}
		mv := moverOf(first.DType)
		out := mv.alloc(total)
		if total == 0 { // the dimensions of an empty result need not multiply
			return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
		}
		outer := 1
		for _, d := range shape[:a] {
			outer *= d
		}
		inner := 1
		for _, d := range shape[a+1:] {
			inner *= d
		}
		pos := 0
		for o := 0; o < outer; o++ {
			for _, t := range in {
				chunk := t.Shape[a] * inner
				mv.copyN(out, pos, t.Data, o*chunk, chunk)
				pos += chunk
			}
		}
		return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
	}, nil
}

func copyRange(dst any, at int, src any, from, n int) {
	moverOf(dataDType(dst)).copyN(dst, at, src, from, n)
}
