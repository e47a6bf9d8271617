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
	var out any
	if x.DType == tensor.Float32 {
		out = c.Float32Output(n) // strided writes every element
	} else {
		out = mv.Alloc(n)
	}
	if n > 0 {
		if err := mv.strided(c, out, x.Data, shape, strides, base); err != nil {
			return nil, err
		}
	}
	return &tensor.Tensor{DType: x.DType, Shape: shape, Data: out}, nil
}

// Costs of one element a copy moves, in the units of ops.ParallelFor's
// work (see ops.ScalarCost), from which a long copy decides whether it
// splits across cores. Measured here against the sgemm kernel's ~50
// multiply-adds a ns: a Transpose moving runs of 64 elements ~0.4 ns an
// element, one gathering single elements ~0.9, with the output's
// allocation.
const (
	// runCost is an element of a contiguous run moved by copy().
	runCost = ops.ScalarCost / 4
	// gatherCost is an element gathered one at a time, a stride apart.
	gatherCost = ops.ScalarCost / 2
)

// stridedCopy fills dst (len Π shape > 0) in row-major order of shape
// from src at base + Σ index·strides. Dimensions that are contiguous in
// src are merged first, so the inner loop is one copy() per run. A long
// copy splits into contiguous ranges of dst across the engine's cores
// (ops.Context.ParallelRows), each element moved alone, so the split changes
// nothing; a copy without a request (nil c) runs on the caller.
func stridedCopy[T any](c *ops.Context, dst, src []T, shape, strides []int, base int) error {
	shape, strides = coalesceStrides(shape, strides)
	rank := len(shape)
	if rank == 0 {
		dst[0] = src[base]
		return nil
	}
	if c == nil {
		stridedRange(dst, src, shape, strides, base, 0, len(dst))
		return nil
	}
	cost := runCost
	if strides[rank-1] != 1 {
		cost = gatherCost
	}
	return c.ParallelRows(len(dst), cost, func(lo, hi int) { stridedRange(dst, src, shape, strides, base, lo, hi) })
}

// stridedRange fills dst[lo:hi] as stridedCopy fills dst (shape and
// strides coalesced, rank >= 1): from lo's coordinates it finds lo's
// offset in src, then moves run by run.
func stridedRange[T any](dst, src []T, shape, strides []int, base, lo, hi int) {
	rank := len(shape)
	var buf [8]int
	idx := buf[:0]
	if rank > len(buf) {
		idx = make([]int, rank)
	}
	idx = idx[:rank]
	at := base
	for d, rem := rank-1, lo; d >= 0; d-- {
		idx[d] = rem % shape[d]
		rem /= shape[d]
		at += idx[d] * strides[d]
	}
	last := rank - 1
	inner, step := shape[last], strides[last]
	for o := lo; o < hi; {
		n := min(inner-idx[last], hi-o)
		stridedRow(dst[o:o+n], src, at, n, step)
		o += n
		idx[last] += n
		at += n * step
		for d := last; d > 0 && idx[d] == shape[d]; d-- { // carry into the dimension before
			idx[d] = 0
			idx[d-1]++
			at += strides[d-1] - shape[d]*strides[d]
		}
	}
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
