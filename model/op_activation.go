package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	registry["LeakyRelu"] = buildLeakyRelu
	registry["Gelu"] = buildGelu
	registry["Clip"] = buildClip
	registry["Transpose"] = buildTranspose
	registry["Cast"] = buildCast
	registry["CastLike"] = buildCastLike
	registry["ArgMax"] = buildArgMax
	registry["Shape"] = buildShape
	registry["Squeeze"] = buildSqueeze
	registry["Unsqueeze"] = buildUnsqueeze
	registry["Concat"] = buildConcat
}

// floatMap applies f elementwise to a float32 or float64 tensor, in float64.
func floatMap(op string, x *tensor.Tensor, f func(float64) float64) (*tensor.Tensor, error) {
	switch d := x.Data.(type) {
	case []float32:
		r := make([]float32, len(d))
		for i, v := range d {
			r[i] = float32(f(float64(v)))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []float64:
		r := make([]float64, len(d))
		for i, v := range d {
			r[i] = f(v)
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return nil, inputErrorf("%s does not take %v", op, x.DType)
}

func unary(f func(x *tensor.Tensor) (*tensor.Tensor, error)) opFunc {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		t, err := f(in[0])
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}
}

func buildLeakyRelu(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("alpha"); err != nil {
		return nil, err
	}
	alpha, err := n.floatAttr("alpha", 0.01)
	if err != nil {
		return nil, err
	}
	a := float64(alpha)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("LeakyRelu", x, func(v float64) float64 {
			if v < 0 {
				return a * v
			}
			return v
		})
	}), nil
}

// buildGelu implements Gelu (opset 20): x·Φ(x), or its tanh approximation.
func buildGelu(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("approximate"); err != nil {
		return nil, err
	}
	approx, err := n.stringAttr("approximate", "none")
	if err != nil {
		return nil, err
	}
	var f func(float64) float64
	switch approx {
	case "none":
		f = func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
	case "tanh":
		c := math.Sqrt(2 / math.Pi)
		f = func(v float64) float64 { return 0.5 * v * (1 + math.Tanh(c*(v+0.044715*v*v*v))) }
	default:
		return nil, unsupportedf("Gelu approximate=%q", approx)
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return floatMap("Gelu", x, f) }), nil
}

func softmaxGeometry(x *tensor.Tensor, axis int64, legacy bool) (outer, dim, inner int, err error) {
	if x.Rank() == 0 {
		return 0, 0, 0, inputErrorf("needs a tensor of rank >= 1")
	}
	a, err := normAxis(axis, x.Rank())
	if err != nil {
		return 0, 0, 0, err
	}
	outer, dim, inner = 1, 1, 1
	for i, d := range x.Shape {
		switch {
		case i < a:
			outer *= d
		case i == a || legacy:
			dim *= d
		default:
			inner *= d
		}
	}
	return outer, dim, inner, nil
}

func logSoftmax[T float32 | float64](x []T, outer, dim, inner int) []T {
	r := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			m := math.Inf(-1)
			for i := 0; i < dim; i++ {
				m = math.Max(m, float64(x[base+i*inner]))
			}
			var sum float64
			for i := 0; i < dim; i++ {
				sum += math.Exp(float64(x[base+i*inner]) - m)
			}
			ls := math.Log(sum)
			for i := 0; i < dim; i++ {
				r[base+i*inner] = T(float64(x[base+i*inner]) - m - ls)
			}
		}
	}
	return r
}

// buildClip implements Clip: min/max attributes before opset 11, optional
// inputs from 11 on.
func buildClip(n *node) (opFunc, error) {
	if n.opset < 11 {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		if err := n.onlyAttrs("min", "max"); err != nil {
			return nil, err
		}
		lo, err := n.floatAttr("min", -math.MaxFloat32)
		if err != nil {
			return nil, err
		}
		hi, err := n.floatAttr("max", math.MaxFloat32)
		if err != nil {
			return nil, err
		}
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
			return floatMap("Clip", x, func(v float64) float64 { return math.Min(math.Max(v, float64(lo)), float64(hi)) })
		}), nil
	}
	if err := n.checkArity(1, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs(); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var lo, hi *tensor.Tensor
		if len(in) > 1 {
			lo = in[1]
		}
		if len(in) > 2 {
			hi = in[2]
		}
		for _, b := range []*tensor.Tensor{lo, hi} {
			if b != nil && (b.DType != x.DType || b.Len() != 1) {
				return nil, inputErrorf("Clip bounds must be scalars of the input's type %v", x.DType)
			}
		}
		var out any
		switch d := x.Data.(type) {
		case []float32:
			out = clip(d, lo, hi)
		case []float64:
			out = clip(d, lo, hi)
		case []int8:
			out = clip(d, lo, hi)
		case []uint8:
			out = clip(d, lo, hi)
		case []int16:
			out = clip(d, lo, hi)
		case []uint16:
			out = clip(d, lo, hi)
		case []int32:
			out = clip(d, lo, hi)
		case []uint32:
			out = clip(d, lo, hi)
		case []int64:
			out = clip(d, lo, hi)
		case []uint64:
			out = clip(d, lo, hi)
		default:
			return nil, inputErrorf("Clip does not take %v", x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

// clip bounds x to [lo, hi]; when lo > hi every value becomes hi, as ONNX
// (min then max) specifies.
func clip[T tensor.Numeric](x []T, lo, hi *tensor.Tensor) []T {
	r := slices.Clone(x)
	if lo != nil {
		l := lo.Data.([]T)[0]
		for i := range r {
			r[i] = max(r[i], l)
		}
	}
	if hi != nil {
		h := hi.Data.([]T)[0]
		for i := range r {
			r[i] = min(r[i], h)
		}
	}
	return r
}

func buildTranspose(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("perm"); err != nil {
		return nil, err
	}
	perm, hasPerm, err := n.intsAttr("perm")
	if err != nil {
		return nil, err
	}
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
func transpose(x *tensor.Tensor, p []int) *tensor.Tensor {
	r := x.Rank()
	shape := make([]int, r)
	for i, a := range p {
		shape[i] = x.Shape[a]
	}
	strides := make([]int, r)
	s := 1
	for i := r - 1; i >= 0; i-- {
		strides[i] = s
		s *= x.Shape[i]
	}
	src := make([]int, r) // x's stride for each output axis
	for i, a := range p {
		src[i] = strides[a]
	}
	n := x.Len()
	idx := make([]int, n)
	counter := make([]int, r)
	off := 0
	for o := 0; o < n; o++ {
		idx[o] = off
		for d := r - 1; d >= 0; d-- {
			counter[d]++
			off += src[d]
			if counter[d] < shape[d] {
				break
			}
			off -= src[d] * shape[d]
			counter[d] = 0
		}
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: gather(x.Data, idx)}
}

// gather returns data[idx[i]] for each i.
func gather(data any, idx []int) any {
	switch d := data.(type) {
	case []bool:
		return gatherT(d, idx)
	case []uint8:
		return gatherT(d, idx)
	case []uint16:
		return gatherT(d, idx)
	case []uint32:
		return gatherT(d, idx)
	case []uint64:
		return gatherT(d, idx)
	case []int8:
		return gatherT(d, idx)
	case []int16:
		return gatherT(d, idx)
	case []int32:
		return gatherT(d, idx)
	case []int64:
		return gatherT(d, idx)
	case []float32:
		return gatherT(d, idx)
	case []float64:
		return gatherT(d, idx)
	}
	panic(fmt.Sprintf("model: gather of %T", data))
}

func gatherT[T any](d []T, idx []int) []T {
	r := make([]T, len(idx))
	for i, j := range idx {
		r[i] = d[j]
	}
	return r
}

func buildCast(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("to", "saturate", "round_mode"); err != nil {
		return nil, err
	}
	to, err := n.intAttr("to", 0)
	if err != nil {
		return nil, err
	}
	dt, err := DataTypeFromONNX(onnxpb.DataType(to))
	if err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return castTo(x, dt), nil }), nil
}

func buildCastLike(n *node) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("saturate", "round_mode"); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return []*tensor.Tensor{castTo(in[0], in[1].DType)}, nil
	}, nil
}

// castTo converts x to dt with Go's conversions: floats to integers
// truncate toward zero, numbers to BOOL are x != 0, BOOL to numbers 0 or 1.
func castTo(x *tensor.Tensor, dt tensor.DataType) *tensor.Tensor {
	if x.DType == dt {
		return x
	}
	var out any
	switch dt {
	case tensor.Bool:
		b := make([]bool, x.Len())
		for i, v := range x.Float64s() {
			b[i] = v != 0
		}
		out = b
	case tensor.Float32:
		out = convertFrom[float32](x.Data)
	case tensor.Float64:
		out = convertFrom[float64](x.Data)
	case tensor.Int8:
		out = convertFrom[int8](x.Data)
	case tensor.Uint8:
		out = convertFrom[uint8](x.Data)
	case tensor.Int16:
		out = convertFrom[int16](x.Data)
	case tensor.Uint16:
		out = convertFrom[uint16](x.Data)
	case tensor.Int32:
		out = convertFrom[int32](x.Data)
	case tensor.Uint32:
		out = convertFrom[uint32](x.Data)
	case tensor.Int64:
		out = convertFrom[int64](x.Data)
	case tensor.Uint64:
		out = convertFrom[uint64](x.Data)
	}
	return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: out}
}

func convertFrom[D tensor.Numeric](src any) []D {
	switch s := src.(type) {
	case []bool:
		r := make([]D, len(s))
		for i, v := range s {
			if v {
				r[i] = 1
			}
		}
		return r
	case []uint8:
		return convert[D](s)
	case []uint16:
		return convert[D](s)
	case []uint32:
		return convert[D](s)
	case []uint64:
		return convert[D](s)
	case []int8:
		return convert[D](s)
	case []int16:
		return convert[D](s)
	case []int32:
		return convert[D](s)
	case []int64:
		return convert[D](s)
	case []float32:
		return convert[D](s)
	case []float64:
		return convert[D](s)
	}
	return nil
}

func buildArgMax(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("axis", "keepdims", "select_last_index"); err != nil {
		return nil, err
	}
	axis, err := n.intAttr("axis", 0)
	if err != nil {
		return nil, err
	}
	keep, err := n.intAttr("keepdims", 1)
	if err != nil {
		return nil, err
	}
	last, err := n.intAttr("select_last_index", 0)
	if err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() == 0 {
			return nil, inputErrorf("ArgMax needs rank >= 1")
		}
		a, err := normAxis(axis, x.Rank())
		if err != nil {
			return nil, err
		}
		if x.Shape[a] == 0 {
			return nil, inputErrorf("ArgMax over an empty axis")
		}
		if x.DType == tensor.Bool {
			return nil, inputErrorf("ArgMax does not take BOOL")
		}
		v := x.Float64s()
		outer, dim, inner := 1, x.Shape[a], 1
		for i, d := range x.Shape {
			if i < a {
				outer *= d
			} else if i > a {
				inner *= d
			}
		}
		out := make([]int64, outer*inner)
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				base := o*dim*inner + j
				best := 0
				for i := 1; i < dim; i++ {
					c, b := v[base+i*inner], v[base+best*inner]
					if c > b || last != 0 && c == b {
						best = i
					}
				}
				out[o*inner+j] = int64(best)
			}
		}
		shape := slices.Clone(x.Shape)
		if keep != 0 {
			shape[a] = 1
		} else {
			shape = slices.Delete(shape, a, a+1)
		}
		return tensor.From(shape, out), nil
	}), nil
}

func buildShape(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("start", "end"); err != nil {
		return nil, err
	}
	start, err := n.intAttr("start", 0)
	if err != nil {
		return nil, err
	}
	end, err := n.intAttr("end", math.MaxInt64)
	if err != nil {
		return nil, err
	}
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

// axesOf returns the axes of Squeeze/Unsqueeze: an attribute before
// opset 13, an optional INT64 input from 13 on.
func axesOf(n *node, in []*tensor.Tensor, attr []int64, hasAttr bool) ([]int64, bool, error) {
	if n.opset < 13 {
		return attr, hasAttr, nil
	}
	if len(in) < 2 || in[1] == nil {
		return nil, false, nil
	}
	a, ok := in[1].Data.([]int64)
	if !ok {
		return nil, false, inputErrorf("axes must be INT64, got %v", in[1].DType)
	}
	return a, true, nil
}

func buildSqueeze(n *node) (opFunc, error) {
	if err := n.checkArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("axes"); err != nil {
		return nil, err
	}
	attr, hasAttr, err := n.intsAttr("axes")
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		axes, given, err := axesOf(n, in, attr, hasAttr)
		if err != nil {
			return nil, err
		}
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
		t, err := x.Reshaped(shape)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func buildUnsqueeze(n *node) (opFunc, error) {
	if err := n.checkArity(1, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("axes"); err != nil {
		return nil, err
	}
	attr, hasAttr, err := n.intsAttr("axes")
	if err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		axes, given, err := axesOf(n, in, attr, hasAttr)
		if err != nil {
			return nil, err
		}
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
		t, err := x.Reshaped(shape)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func buildConcat(n *node) (opFunc, error) {
	if err := n.checkArity(1, 1<<16, 1, 1); err != nil {
		return nil, err
	}
	if err := n.onlyAttrs("axis"); err != nil {
		return nil, err
	}
	axis, err := n.intAttr("axis", math.MinInt64)
	if err != nil {
		return nil, err
	}
	if axis == math.MinInt64 {
		return nil, fmt.Errorf("Concat needs the axis attribute")
	}
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
		outer := 1
		for _, d := range shape[:a] {
			outer *= d
		}
		inner := 1
		for _, d := range shape[a+1:] {
			inner *= d
		}
		// index map: for each output element, which input and where
		total, err := tensor.NumElements(shape)
		if err != nil {
			return nil, err
		}
		out, _ := tensor.MakeSlice(first.DType, total)
		pos := 0
		for o := 0; o < outer; o++ {
			for _, t := range in {
				chunk := t.Shape[a] * inner
				copyRange(out, pos, t.Data, o*chunk, chunk)
				pos += chunk
			}
		}
		return []*tensor.Tensor{{DType: first.DType, Shape: shape, Data: out}}, nil
	}, nil
}

func copyRange(dst any, at int, src any, from, n int) {
	switch d := dst.(type) {
	case []bool:
		copy(d[at:at+n], src.([]bool)[from:])
	case []uint8:
		copy(d[at:at+n], src.([]uint8)[from:])
	case []uint16:
		copy(d[at:at+n], src.([]uint16)[from:])
	case []uint32:
		copy(d[at:at+n], src.([]uint32)[from:])
	case []uint64:
		copy(d[at:at+n], src.([]uint64)[from:])
	case []int8:
		copy(d[at:at+n], src.([]int8)[from:])
	case []int16:
		copy(d[at:at+n], src.([]int16)[from:])
	case []int32:
		copy(d[at:at+n], src.([]int32)[from:])
	case []int64:
		copy(d[at:at+n], src.([]int64)[from:])
	case []float32:
		copy(d[at:at+n], src.([]float32)[from:])
	case []float64:
		copy(d[at:at+n], src.([]float64)[from:])
	}
}
