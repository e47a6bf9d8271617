package tensor

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// StridedView returns a new tensor of shape filled from x's data at
// base + Σ index·strides (a view: slice, transpose, broadcast, tile),
// copying whole contiguous runs. The elements it moves count as c's work
// (ops.Context.Tick): a long copy stops with the request's error once
// the request ends; c may be nil (no request to watch).
func StridedView(c *ops.Context, x *tensor.Tensor, shape, strides []int, base int) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if err := c.ReserveTensor(x.DType, shape); err != nil {
		return nil, err
	}
	mv := MoverOf(x.DType)
	out := mv.Alloc(n)
	if n > 0 {
		if err := mv.strided(c, out, x.Data, shape, strides, base); err != nil {
			return nil, err
		}
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: out}, nil
}

// stridedCopy fills dst (len Π shape > 0) in row-major order of shape
// from src at base + Σ index·strides. Dimensions that are contiguous in
// src are merged first, so the inner loop is one copy() per run; runs
// longer than ops.TickEvery are copied in pieces, each counted with
// c.Tick.
func stridedCopy[T any](c *ops.Context, dst, src []T, shape, strides []int, base int) error {
	shape, strides = coalesceStrides(shape, strides)
	rank := len(shape)
	if rank == 0 {
		dst[0] = src[base]
		return nil
	}
	inner, step := shape[rank-1], strides[rank-1]
	it := tensor.NewIter(shape[:rank-1], strides[:rank-1])
	for o := 0; it.Next(); o += inner {
		at := base + it.Off(0)
		for k := 0; k < inner; k += ops.TickEvery {
			n := min(ops.TickEvery, inner-k)
			if err := c.Tick(n); err != nil {
				return err
			}
			stridedRow(dst[o+k:o+k+n], src, at+k*step, n, step)
		}
	}
	return nil
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
