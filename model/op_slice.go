package model

import (
	"fmt"
	"math"
	"math/big"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Slice", Since: 1, Until: 9, Fold: true}, buildSlice1)
	register(Descriptor{Type: "Slice", Since: 10, Fold: true}, buildSlice)
	register(Descriptor{Type: "Split", Since: 1, Until: 1, Fold: true}, splitBuilder(1))
	register(Descriptor{Type: "Split", Since: 2, Until: 12, Fold: true}, splitBuilder(2))
	register(Descriptor{Type: "Split", Since: 13, Until: 17, Fold: true}, splitBuilder(13))
	register(Descriptor{Type: "Split", Since: 18, Fold: true}, splitBuilder(18))
	register(Descriptor{Type: "Tile", Since: 6, Fold: true}, buildTile)
	register(Descriptor{Type: "Expand", Since: 8, Fold: true}, buildExpand)
	register(Descriptor{Type: "Range", Since: 11, Until: 26, Fold: true}, func(n *node, _ *noAttrs) (opFunc, error) {
		return buildRange(n, &RangeAttrs{StashType: 1})
	})
	register(Descriptor{Type: "Range", Since: 27, Fold: true}, buildRange)
	register(Descriptor{Type: "Size", Since: 1, Fold: true}, buildSize)
}

// SliceAttrs are Slice's attributes before opset 10 (they became inputs).
type SliceAttrs struct {
	Starts []int64 `onnx:"starts"`
	Ends   []int64 `onnx:"ends"`
	Axes   []int64 `onnx:"axes"` // nil: the first len(Starts) axes
}

// SplitAttrs are Split's attributes: split is an attribute before opset
// 13 (an input after), num_outputs exists from opset 18.
type SplitAttrs struct {
	Axis       int64   `onnx:"axis"`
	Split      []int64 `onnx:"split"`
	NumOutputs *int64  `onnx:"num_outputs"`
}

// RangeAttrs are Range's attributes (opset 27).
type RangeAttrs struct {
	// StashType is the ONNX type FP16 and BF16 ranges are computed in:
	// 1 (FLOAT) computes start + i·delta in float32; anything else
	// accumulates delta in the output's own precision.
	StashType int64 `onnx:"stash_type" default:"1"`
}

// mover moves elements between the untyped slices of tensor.Tensor.Data
// that hold one element type. The data-movement operators (Slice, Split,
// Gather, Transpose, Concat, ...) run on it for every element type, and it
// copies whole contiguous runs with copy().
type mover interface {
	alloc(n int) any
	clone(src any) any
	// strided fills dst in row-major order of shape from src at
	// base + Σ index·strides.
	strided(dst, src any, shape, strides []int, base int)
	// runs copies len(offs) runs of run elements:
	// dst[at+i·run:][:run] = src[base+offs[i]:][:run].
	runs(dst any, at int, src any, base int, offs []int, run int)
	// put is runs' converse: dst[base+offs[i]:][:run] = src[at+i·run:][:run].
	put(dst any, base int, offs []int, src any, at int, run int)
	// copyN copies dst[d:d+n] = src[s:s+n].
	copyN(dst any, d int, src any, s, n int)
	// fill sets dst[d:d+n] to v (a slice holding one element of the type).
	fill(dst any, d, n int, v any)
}

type typedMover[T tensor.Elem] struct{}

func (typedMover[T]) alloc(n int) any   { return make([]T, n) }
func (typedMover[T]) clone(src any) any { return append([]T(nil), src.([]T)...) }

func (typedMover[T]) strided(dst, src any, shape, strides []int, base int) {
	stridedCopy(dst.([]T), src.([]T), shape, strides, base)
}

func (typedMover[T]) runs(dst any, at int, src any, base int, offs []int, run int) {
	d, s := dst.([]T)[at:], src.([]T)[base:]
	if run == 1 {
		for i, o := range offs {
			d[i] = s[o]
		}
		return
	}
	for i, o := range offs {
		copy(d[i*run:(i+1)*run], s[o:o+run])
	}
}

func (typedMover[T]) put(dst any, base int, offs []int, src any, at int, run int) {
	d, s := dst.([]T)[base:], src.([]T)[at:]
	if run == 1 {
		for i, o := range offs {
			d[o] = s[i]
		}
		return
	}
	for i, o := range offs {
		copy(d[o:o+run], s[i*run:(i+1)*run])
	}
}

func (typedMover[T]) copyN(dst any, d int, src any, s, n int) {
	copy(dst.([]T)[d:d+n], src.([]T)[s:s+n])
}

func (typedMover[T]) fill(dst any, d, n int, v any) {
	x := v.([]T)[0]
	r := dst.([]T)[d : d+n]
	for i := range r {
		r[i] = x
	}
}

// moverOf returns the mover of dt's element type.
func moverOf(dt tensor.DataType) mover {
	switch dt {
	case tensor.Bool:
		return typedMover[bool]{}
	case tensor.Uint8:
		return typedMover[uint8]{}
	case tensor.Uint16:
		return typedMover[uint16]{}
	case tensor.Uint32:
		return typedMover[uint32]{}
	case tensor.Uint64:
		return typedMover[uint64]{}
	case tensor.Int8:
		return typedMover[int8]{}
	case tensor.Int16:
		return typedMover[int16]{}
	case tensor.Int32:
		return typedMover[int32]{}
	case tensor.Int64:
		return typedMover[int64]{}
	case tensor.Float32:
		return typedMover[float32]{}
	case tensor.Float64:
		return typedMover[float64]{}
	case tensor.Float16:
		return typedMover[tensor.F16]{}
	case tensor.BFloat16:
		return typedMover[tensor.BF16]{}
	case tensor.String:
		return typedMover[string]{}
	}
	panic(fmt.Sprintf("model: no element type %v", dt)) // tensors are built with a valid type
}

// stridedView returns a new tensor of shape filled from x's data at
// base + Σ index·strides (a view: slice, transpose, broadcast, tile),
// copying whole contiguous runs.
func stridedView(x *tensor.Tensor, shape, strides []int, base int) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	mv := moverOf(x.DType)
	out := mv.alloc(n)
	if n > 0 {
		mv.strided(out, x.Data, shape, strides, base)
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: out}, nil
}

// stridedCopy fills dst (len Π shape > 0) in row-major order of shape
// from src at base + Σ index·strides. Dimensions that are contiguous in
// src are merged first, so the inner loop is one copy() per run.
func stridedCopy[T any](dst, src []T, shape, strides []int, base int) {
	shape, strides = coalesceStrides(shape, strides)
	rank := len(shape)
	if rank == 0 {
		dst[0] = src[base]
		return
	}
	inner, step := shape[rank-1], strides[rank-1]
	if rank == 1 {
		stridedRow(dst, src, base, inner, step)
		return
	}
	o := 0
	tensor.Rows(shape, [][]int{strides}, func(offs []int) {
		stridedRow(dst[o:o+inner], src, base+offs[0], inner, step)
		o += inner
	})
}

// stridedRow sets dst[i] = src[at+i·step] for i < n.
func stridedRow[T any](dst, src []T, at, n, step int) {
	switch step {
	case 1:
		copy(dst[:n], src[at:at+n])
	case 0:
		v := src[at]
		for i := range dst[:n] {
			dst[i] = v
		}
	default:
		for i := range dst[:n] {
			dst[i] = src[at]
			at += step
		}
	}
}

// coalesceStrides drops dimensions of size 1 and merges each dimension
// into the next where src walks them as one (stride[i] = stride[i+1]·
// shape[i+1]). The walk they describe is unchanged.
func coalesceStrides(shape, strides []int) ([]int, []int) {
	s := make([]int, 0, len(shape))
	st := make([]int, 0, len(shape))
	for i, d := range shape {
		if d == 1 {
			continue
		}
		if k := len(s) - 1; k >= 0 && st[k] == strides[i]*d {
			s[k] *= d
			st[k] = strides[i]
			continue
		}
		s = append(s, d)
		st = append(st, strides[i])
	}
	return s, st
}

// indexList reads a 1-D INT32 or INT64 tensor (Slice's starts, Tile's
// repeats, ...) as int64s.
func indexList(t *tensor.Tensor, what string) ([]int64, error) {
	if t == nil {
		return nil, nil
	}
	if t.DType != tensor.Int64 && t.DType != tensor.Int32 {
		return nil, inputErrorf("%s must be INT32 or INT64, got %v", what, t.DType)
	}
	if t.Rank() > 1 {
		return nil, inputErrorf("%s must be 1-D, got shape %s", what, tensor.ShapeString(t.Shape))
	}
	v, err := t.Int64s()
	if err != nil {
		return nil, inputErrorf("%s: %v", what, err)
	}
	return v, nil
}

// SliceView resolves Slice's starts, ends, axes (nil: the first
// len(starts) axes) and steps (nil: all 1) against a tensor of the given
// shape as numpy does (negative values count from the end of their axis,
// out-of-range ones clamp) and returns the slice as a view of the
// tensor's row-major data: its shape, the element stride along each of
// its axes and the offset of its first element. The gradient of Slice
// walks the same view.
func SliceView(shape []int, starts, ends, axes, steps []int64) (out, strides []int, base int, err error) {
	first, step, count, err := sliceBounds(shape, starts, ends, axes, steps)
	if err != nil {
		return nil, nil, 0, err
	}
	rows := tensor.Strides(shape)
	strides = make([]int, len(rows))
	for a := range rows {
		strides[a] = step[a] * rows[a]
		base += first[a] * rows[a]
	}
	return count, strides, base, nil
}

// sliceBounds returns, for every axis of shape, the first index a slice
// takes, its step and how many elements it takes.
func sliceBounds(shape []int, starts, ends, axes, steps []int64) (first, step, count []int, err error) {
	r := len(shape)
	if len(ends) != len(starts) || axes != nil && len(axes) != len(starts) || steps != nil && len(steps) != len(starts) {
		return nil, nil, nil, inputErrorf("Slice starts, ends, axes and steps differ in length (%d, %d, %d, %d)", len(starts), len(ends), len(axes), len(steps))
	}
	if axes == nil && len(starts) > r {
		return nil, nil, nil, inputErrorf("Slice has %d starts for rank %d", len(starts), r)
	}
	first, step, count = make([]int, r), make([]int, r), make([]int, r)
	seen := make([]bool, r)
	for a := range shape {
		step[a], count[a] = 1, shape[a]
	}
	for i := range starts {
		a := i
		if axes != nil {
			if a, err = normAxis(axes[i], r); err != nil {
				return nil, nil, nil, err
			}
		}
		if seen[a] {
			return nil, nil, nil, inputErrorf("Slice axes %v repeat axis %d", axes, a)
		}
		seen[a] = true
		st := int64(1)
		if steps != nil {
			st = steps[i]
		}
		if st == 0 {
			return nil, nil, nil, inputErrorf("Slice step is 0 on axis %d", a)
		}
		d := int64(shape[a])
		s, e := starts[i], ends[i]
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		var c int64
		if st > 0 {
			s, e = min(max(s, 0), d), min(max(e, 0), d)
			if e > s {
				c = (e-s-1)/st + 1
			}
		} else {
			s, e = min(max(s, 0), d-1), min(max(e, -1), d-1)
			if s > e {
				c = (s-e-1)/(-st) + 1
			}
		}
		if c == 0 {
			s = 0
		}
		first[a], count[a] = int(s), int(c)
		// A step beyond the axis takes one element at most: clamp it so
		// that stride arithmetic cannot overflow.
		step[a] = int(max(min(st, d+1), -(d + 1)))
	}
	return first, step, count, nil
}

// sliceTensor returns the slice of x that starts, ends, axes and steps
// select.
func sliceTensor(x *tensor.Tensor, starts, ends, axes, steps []int64) (*tensor.Tensor, error) {
	shape, strides, base, err := SliceView(x.Shape, starts, ends, axes, steps)
	if err != nil {
		return nil, err
	}
	return stridedView(x, shape, strides, base)
}

// buildSlice1 implements Slice before opset 10: starts, ends and axes as
// attributes, steps of 1.
func buildSlice1(n *node, at *SliceAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Starts == nil || at.Ends == nil {
		return nil, fmt.Errorf("Slice needs the starts and ends attributes")
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return sliceTensor(x, at.Starts, at.Ends, at.Axes, nil)
	}), nil
}

// buildSlice implements Slice from opset 10: starts, ends, and the
// optional axes and steps as INT32 or INT64 inputs.
func buildSlice(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(3, 5, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var lists [4][]int64
		for i, what := range []string{"starts", "ends", "axes", "steps"} {
			if i+1 < len(in) {
				var err error
				if lists[i], err = indexList(in[i+1], "Slice "+what); err != nil {
					return nil, err
				}
			}
		}
		y, err := sliceTensor(in[0], lists[0], lists[1], lists[2], lists[3])
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// splitBuilder returns Split's builder for the opset range starting at
// since: split as an attribute or input (1), an attribute (2–12), an
// input (13–17), an input or num_outputs (18 on).
func splitBuilder(since int64) func(n *node, at *SplitAttrs) (opFunc, error) {
	return func(n *node, at *SplitAttrs) (opFunc, error) {
		maxIn := 2
		if since == 2 {
			maxIn = 1
		}
		if err := n.checkArity(1, maxIn, 1, 1<<16); err != nil {
			return nil, err
		}
		if at.Split != nil && since >= 13 {
			return nil, fmt.Errorf("Split takes split as an input from opset 13, not an attribute")
		}
		if at.NumOutputs != nil && since < 18 {
			return nil, unsupportedf("attribute %q before opset 18", "num_outputs")
		}
		outs := len(n.pb.Outputs)
		if at.NumOutputs != nil {
			if *at.NumOutputs != int64(outs) {
				return nil, fmt.Errorf("Split has num_outputs %d but %d outputs", *at.NumOutputs, outs)
			}
			if len(n.pb.Inputs) > 1 && n.pb.Inputs[1] != "" {
				return nil, fmt.Errorf("Split takes the split input or num_outputs, not both")
			}
		}
		axis, attrSplit := at.Axis, at.Split
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			a, err := normAxis(axis, x.Rank())
			if err != nil {
				return nil, err
			}
			split := attrSplit
			if len(in) > 1 && in[1] != nil {
				if split, err = indexList(in[1], "Split split"); err != nil {
					return nil, err
				}
			}
			sizes, err := splitSizes(x.Shape[a], split, outs)
			if err != nil {
				return nil, err
			}
			return splitTensor(x, a, sizes)
		}, nil
	}
}

// splitSizes returns the part sizes of Split along an axis of size dim:
// split when given, else outs parts of ⌈dim/outs⌉, the last smaller.
func splitSizes(dim int, split []int64, outs int) ([]int, error) {
	sizes := make([]int, outs)
	if split != nil {
		if len(split) != outs {
			return nil, inputErrorf("Split split %v has %d entries for %d outputs", split, len(split), outs)
		}
		var sum int64
		for i, s := range split {
			if s < 0 || s > int64(dim) {
				return nil, inputErrorf("Split split %v has an invalid size %d for an axis of %d", split, s, dim)
			}
			sum += s
			sizes[i] = int(s)
		}
		if sum != int64(dim) {
			return nil, inputErrorf("Split split %v sums to %d, the axis has %d", split, sum, dim)
		}
		return sizes, nil
	}
	part := (dim + outs - 1) / outs
	left := dim
	for i := range sizes {
		sizes[i] = min(part, left)
		left -= sizes[i]
	}
	if outs > 1 && sizes[outs-2] != part {
		return nil, inputErrorf("Split cannot cut an axis of %d into %d parts", dim, outs)
	}
	return sizes, nil
}

// splitTensor cuts x along axis a into parts of the given sizes.
func splitTensor(x *tensor.Tensor, a int, sizes []int) ([]*tensor.Tensor, error) {
	rows := tensor.Strides(x.Shape)
	outs := make([]*tensor.Tensor, len(sizes))
	off := 0
	for i, s := range sizes {
		shape := append([]int(nil), x.Shape...)
		shape[a] = s
		t, err := stridedView(x, shape, rows, off*rows[a])
		if err != nil {
			return nil, err
		}
		outs[i] = t
		off += s
	}
	return outs, nil
}

func buildTile(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		reps, err := indexList(in[1], "Tile repeats")
		if err != nil {
			return nil, err
		}
		y, err := tileTensor(x, reps)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// tileTensor repeats x reps[i] times along each axis i: a view of shape
// [r0, d0, r1, d1, ...] with stride 0 along the repeats.
func tileTensor(x *tensor.Tensor, reps []int64) (*tensor.Tensor, error) {
	r := x.Rank()
	if len(reps) != r {
		return nil, inputErrorf("Tile repeats %v do not fit rank %d", reps, r)
	}
	rows := tensor.Strides(x.Shape)
	shape := make([]int, r)
	view, strides := make([]int, 2*r), make([]int, 2*r)
	for i, rep := range reps {
		if rep < 0 || rep > tensor.MaxElements || x.Shape[i] > 0 && rep > int64(tensor.MaxElements/x.Shape[i]) {
			return nil, inputErrorf("Tile repeat %d is invalid for a dimension of %d", rep, x.Shape[i])
		}
		view[2*i], view[2*i+1] = int(rep), x.Shape[i]
		strides[2*i+1] = rows[i]
		shape[i] = int(rep) * x.Shape[i]
	}
	if n, err := tensor.NumElements(shape); err != nil || n == 0 {
		y, _, err := idxNew(x.DType, shape)
		return y, err
	}
	y, err := stridedView(x, view, strides, 0)
	if err != nil {
		return nil, err
	}
	y.Shape = shape
	return y, nil
}

func buildExpand(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		spec, err := indexList(in[1], "Expand shape")
		if err != nil {
			return nil, err
		}
		shape := make([]int, len(spec))
		for i, d := range spec {
			if d < 0 || d > tensor.MaxElements {
				return nil, inputErrorf("Expand shape %v has an invalid dimension %d", spec, d)
			}
			shape[i] = int(d)
		}
		out, err := broadcastShape(x.Shape, shape)
		if err != nil {
			return nil, err
		}
		y, err := stridedView(x, out, tensor.BroadcastStrides(x.Shape, out), 0)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func buildSize(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return tensor.Scalar(int64(x.Len())), nil
	}), nil
}

// buildRange implements Range: start, start+delta, ... up to limit
// (exclusive); ⌈(limit−start)/delta⌉ elements, none when negative.
func buildRange(n *node, at *RangeAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	stash := at.StashType
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if err := sameType("Range", in...); err != nil {
			return nil, err
		}
		for i, t := range in {
			if t.Len() != 1 {
				return nil, inputErrorf("Range input %d must be a scalar, has shape %s", i, tensor.ShapeString(t.Shape))
			}
		}
		dt := in[0].DType
		switch dt {
		case tensor.Int16, tensor.Int32, tensor.Int64:
			v := make([]int64, 3)
			for i, t := range in {
				x, _ := t.Int64s()
				v[i] = x[0]
			}
			count, err := rangeCountInt(v[0], v[1], v[2])
			if err != nil {
				return nil, err
			}
			out := make([]int64, count)
			for i := range out {
				out[i] = v[0] + int64(i)*v[2]
			}
			y, err := castTo(tensor.From([]int{count}, out), dt)
			return []*tensor.Tensor{y}, err
		case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
			v := make([]float64, 3)
			for i, t := range in {
				v[i] = t.Float64s()[0]
			}
			count, err := rangeCountFloat(v[0], v[1], v[2])
			if err != nil {
				return nil, err
			}
			var y *tensor.Tensor
			switch dt {
			case tensor.Float64:
				out := make([]float64, count)
				for i := range out {
					out[i] = v[0] + float64(i)*v[2]
				}
				y = tensor.From([]int{count}, out)
			case tensor.Float32:
				out := make([]float32, count)
				s, d := float32(v[0]), float32(v[2])
				for i := range out {
					out[i] = s + float32(i)*d
				}
				y = tensor.From([]int{count}, out)
			default:
				y = rangeHalf(dt, v[0], v[2], count, stash == 1)
			}
			return []*tensor.Tensor{y}, nil
		}
		return nil, inputErrorf("Range does not take %v", dt)
	}, nil
}

// rangeHalf makes an FP16 or BF16 range: start + i·delta in float32
// rounded once (stash), or delta accumulated in the type's precision.
func rangeHalf(dt tensor.DataType, start, delta float64, count int, stash bool) *tensor.Tensor {
	round := func(f float64) float64 {
		if dt == tensor.Float16 {
			return float64(tensor.F16FromFloat64(f).Float32())
		}
		return float64(tensor.BF16FromFloat64(f).Float32())
	}
	vals := make([]float32, count)
	acc := start
	for i := range vals {
		if stash {
			vals[i] = float32(start) + float32(i)*float32(delta)
		} else {
			vals[i] = float32(acc)
			acc = round(acc + delta)
		}
	}
	if dt == tensor.Float16 {
		return tensor.From([]int{count}, tensor.Float32ToHalf[tensor.F16](vals))
	}
	return tensor.From([]int{count}, tensor.Float32ToHalf[tensor.BF16](vals))
}

// rangeCountInt returns max(⌈(limit−start)/delta⌉, 0) without overflow.
func rangeCountInt(start, limit, delta int64) (int, error) {
	if delta == 0 {
		return 0, inputErrorf("Range delta is 0")
	}
	diff := new(big.Int).Sub(big.NewInt(limit), big.NewInt(start))
	d := big.NewInt(delta)
	if diff.Sign() != d.Sign() {
		return 0, nil
	}
	diff.Abs(diff)
	d.Abs(d)
	diff.Add(diff, d).Sub(diff, big.NewInt(1)).Quo(diff, d)
	if !diff.IsInt64() || diff.Int64() > tensor.MaxElements {
		return 0, inputErrorf("Range(%d, %d, %d) has more than %d elements", start, limit, delta, tensor.MaxElements)
	}
	return int(diff.Int64()), nil
}

// rangeCountFloat returns max(⌈(limit−start)/delta⌉, 0).
func rangeCountFloat(start, limit, delta float64) (int, error) {
	if delta == 0 {
		return 0, inputErrorf("Range delta is 0")
	}
	c := math.Ceil((limit - start) / delta)
	if math.IsNaN(c) || c > tensor.MaxElements {
		return 0, inputErrorf("Range(%v, %v, %v) has no finite size of at most %d elements", start, limit, delta, tensor.MaxElements)
	}
	return int(max(c, 0)), nil
}

// dataDType returns the element type of a tensor.Tensor.Data slice.
func dataDType(data any) tensor.DataType {
	switch data.(type) {
	case []bool:
		return tensor.Bool
	case []uint8:
		return tensor.Uint8
	case []uint16:
		return tensor.Uint16
	case []uint32:
		return tensor.Uint32
	case []uint64:
		return tensor.Uint64
	case []int8:
		return tensor.Int8
	case []int16:
		return tensor.Int16
	case []int32:
		return tensor.Int32
	case []int64:
		return tensor.Int64
	case []float32:
		return tensor.Float32
	case []float64:
		return tensor.Float64
	case []tensor.F16:
		return tensor.Float16
	case []tensor.BF16:
		return tensor.BFloat16
	case []string:
		return tensor.String
	}
	return tensor.Invalid
}
