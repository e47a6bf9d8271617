package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Slice is the Slice operator, by opset range.
var Slice = ops.Op{
	ops.Register(ops.Descriptor{Type: "Slice", Since: 1, Until: 9, Fold: true}, buildSlice1),
	ops.Register(ops.Descriptor{Type: "Slice", Since: 10, Fold: true}, buildSlice),
}

// SliceAttrs are Slice's attributes before opset 10 (they became inputs).
type SliceAttrs struct {
	Starts []int64 `onnx:"starts"`
	Ends   []int64 `onnx:"ends"`
	Axes   []int64 `onnx:"axes"` // nil: the first len(Starts) axes
}

// slice1 is a compiled Slice before opset 10: starts, ends and axes from
// its attributes, steps of 1.
type slice1 struct{ starts, ends, axes []int64 }

// buildSlice1 implements Slice before opset 10: starts, ends and axes as
// attributes, steps of 1.
func buildSlice1(n *ops.Node, at *SliceAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Starts == nil || at.Ends == nil {
		return nil, fmt.Errorf("Slice needs the starts and ends attributes")
	}
	return slice1{starts: at.Starts, ends: at.Ends, axes: at.Axes}, nil
}

func (s slice1) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := sliceTensor(c, in[0], s.starts, s.ends, s.axes, nil)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// slice is a compiled Slice from opset 10: starts, ends, and the optional
// axes and steps are INT32 or INT64 inputs.
type slice struct{}

// buildSlice implements Slice from opset 10: starts, ends, and the
// optional axes and steps as INT32 or INT64 inputs.
func buildSlice(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 5, 1, 1); err != nil {
		return nil, err
	}
	return slice{}, nil
}

func (slice) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var lists [4][]int64
	for i, what := range []string{"starts", "ends", "axes", "steps"} {
		if i+1 < len(in) {
			var err error
			if lists[i], err = indexList(in[i+1], "Slice "+what); err != nil {
				return nil, err
			}
		}
	}
	y, err := sliceTensor(c, in[0], lists[0], lists[1], lists[2], lists[3])
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// sliceTensor returns the slice of x that starts, ends, axes and steps
// select.
func sliceTensor(c *ops.Context, x *tensor.Tensor, starts, ends, axes, steps []int64) (*tensor.Tensor, error) {
	shape, strides, base, err := SliceView(x.Shape, starts, ends, axes, steps)
	if err != nil {
		return nil, err
	}
	return StridedView(c, x, shape, strides, base)
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
		return nil, nil, nil, ops.InputErrorf("Slice starts, ends, axes and steps differ in length (%d, %d, %d, %d)", len(starts), len(ends), len(axes), len(steps))
	}
	if axes == nil && len(starts) > r {
		return nil, nil, nil, ops.InputErrorf("Slice has %d starts for rank %d", len(starts), r)
	}
	first, step, count = make([]int, r), make([]int, r), make([]int, r)
	seen := make([]bool, r)
	for a := range shape {
		step[a], count[a] = 1, shape[a]
	}
	for i := range starts {
		a := i
		if axes != nil {
			if a, err = ops.NormAxis(axes[i], r); err != nil {
				return nil, nil, nil, err
			}
		}
		if seen[a] {
			return nil, nil, nil, ops.InputErrorf("Slice axes %v repeat axis %d", axes, a)
		}
		seen[a] = true
		st := int64(1)
		if steps != nil {
			st = steps[i]
		}
		if st == 0 {
			return nil, nil, nil, ops.InputErrorf("Slice step is 0 on axis %d", a)
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
