package spatial

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// The gather Pad, CenterCropPad and Resize (nearest) share: each output
// axis reads the input through a map of source indices.

// gather returns the tensor of shape out whose element at index
// (o_0, ..., o_r-1) is x's element at (src[0][o_0], ..., src[r-1][o_r-1]),
// or fill (a scalar of x's type; nil for zero) where any of those is
// negative. len(src[d]) == out[d]; every entry is < x.Shape[d].
func gather(c *ops.Context, x *tensor.Tensor, out []int, src [][]int, fill *tensor.Tensor) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if err := c.ReserveTensor(x.DType, out); err != nil {
		return nil, err
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[float32](fill))
	case []float64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[float64](fill))
	case []tensor.F16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[tensor.F16](fill))
	case []tensor.BF16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[tensor.BF16](fill))
	case []int8:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int8](fill))
	case []uint8:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint8](fill))
	case []int16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int16](fill))
	case []uint16:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint16](fill))
	case []int32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int32](fill))
	case []uint32:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint32](fill))
	case []int64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[int64](fill))
	case []uint64:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[uint64](fill))
	case []bool:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[bool](fill))
	case []string:
		data, err = gatherAxes(c, d, x.Shape, out, n, src, fillOf[string](fill))
	default:
		return nil, ops.InputErrorf("cannot rearrange %v tensors", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: slices.Clone(out), Data: data}, nil
}

func fillOf[T any](t *tensor.Tensor) T {
	var z T
	if t == nil {
		return z
	}
	if d, ok := t.Data.([]T); ok && len(d) > 0 {
		return d[0]
	}
	return z
}

// segment is a run of one output row: n elements copied from the source
// row at src on, or filled when src < 0.
type segment struct{ at, n, src int }

// segments splits a last-axis source map into runs of consecutive source
// positions and runs of fill.
func segments(src []int) []segment {
	var segs []segment
	for i := 0; i < len(src); {
		j := i + 1
		if src[i] < 0 {
			for j < len(src) && src[j] < 0 {
				j++
			}
		} else {
			for j < len(src) && src[j] == src[j-1]+1 {
				j++
			}
		}
		segs = append(segs, segment{at: i, n: j - i, src: src[i]})
		i = j
	}
	return segs
}

// gatherAxes is gather on a slice: rows along the last axis are built by
// copying runs (when the source map has long runs: Pad, crops) or by a
// per-element gather (Resize), and a row whose source row is that of the
// row before (nearest upsampling repeats rows) is copied from it. Rows
// longer than ops.TickEvery are built in pieces; it stops with the
// request's error once the request ends.
func gatherAxes[T any](oc *ops.Context, xs []T, in, out []int, n int, src [][]int, fill T) ([]T, error) {
	res := make([]T, n)
	if n == 0 {
		return res, nil
	}
	r := len(out)
	if r == 0 {
		res[0] = xs[0]
		return res, nil
	}
	st := tensor.Strides(in)
	w := out[r-1]
	last := src[r-1]
	segs := segments(last)
	bySegs := len(segs)*4 <= w
	hasFill := slices.ContainsFunc(last, func(s int) bool { return s < 0 })
	idx := make([]int, r-1)
	prevBase, prevRow := 0, -1
	for row := 0; row*w < n; row++ {
		base := 0
		for d := 0; d < r-1; d++ {
			s := src[d][idx[d]]
			if s < 0 {
				base = -1
				break
			}
			base += s * st[d]
		}
		k := 0 // the first segment that ends after lo
		for lo := 0; lo < w; lo += ops.TickEvery {
			hi := min(lo+ops.TickEvery, w)
			if err := oc.Tick(hi - lo); err != nil {
				return nil, err
			}
			dst := res[row*w+lo : row*w+hi]
			switch {
			case prevRow >= 0 && base == prevBase:
				copy(dst, res[prevRow*w+lo:prevRow*w+hi])
			case base < 0:
				for i := range dst {
					dst[i] = fill
				}
			case bySegs:
				for k < len(segs) && segs[k].at+segs[k].n <= lo {
					k++
				}
				for _, sg := range segs[k:] {
					if sg.at >= hi {
						break
					}
					p, q := max(sg.at, lo), min(sg.at+sg.n, hi)
					if sg.src < 0 {
						for i := p; i < q; i++ {
							dst[i-lo] = fill
						}
					} else {
						at := base + sg.src + p - sg.at
						copy(dst[p-lo:q-lo], xs[at:at+q-p])
					}
				}
			case hasFill:
				for i, s := range last[lo:hi] {
					if s < 0 {
						dst[i] = fill
					} else {
						dst[i] = xs[base+s]
					}
				}
			default:
				row := xs[base:]
				for i, s := range last[lo:hi] {
					dst[i] = row[s]
				}
			}
		}
		prevBase, prevRow = base, row
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < out[d] {
				break
			}
			idx[d] = 0
		}
	}
	return res, nil
}

// scalarAs converts a one-element numeric tensor to type dt (strings and
// booleans take their zero value, which Pad and Resize fill them with).
func scalarAs(v *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if dt == tensor.String || dt == tensor.Bool {
		return nil, nil
	}
	return tensorops.CastTo(v, dt)
}

// take returns the tensor of shape out holding x's elements at idx.
func take(x *tensor.Tensor, out []int, idx []int) *tensor.Tensor {
	return &tensor.Tensor{DType: x.DType, Shape: out, Data: ops.Gather(x.Data, idx)}
}

// next advances a row-major multi-index over shape, wrapping to zero.
func next(idx, shape []int) {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < shape[d] {
			return
		}
		idx[d] = 0
	}
}
