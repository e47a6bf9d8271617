package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// BroadcastShapes returns the multidirectional (numpy) broadcast of every
// shape given (variadic Min, Max, Sum, Mean; Where), in one allocation:
// elementwise operators call it once per run.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	r := 0 // the broadcast so far is out[n-r:]
	for _, s := range shapes {
		at := out[n-len(s):]
		for j, d := range s {
			if o := at[j]; o != d && o != 1 && d != 1 {
				return nil, InputErrorf("shapes %s and %s cannot be broadcast", tensor.ShapeString(out[n-r:]), tensor.ShapeString(s))
			}
		}
		for j, d := range s {
			if d != 1 {
				at[j] = d
			}
		}
		r = max(r, len(s))
	}
	return out, nil
}

// BroadcastShape returns the multidirectional (numpy) broadcast of a and b.
func BroadcastShape(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, InputErrorf("shapes %s and %s cannot be broadcast", tensor.ShapeString(a), tensor.ShapeString(b))
		}
	}
	return out, nil
}

// BinaryMap computes f(a, b) elementwise with broadcasting into a new slice
// of the output shape.
func BinaryMap[T, R tensor.Elem](a, b []T, as, bs []int, f func(x, y T) R) ([]int, []R, error) {
	out, err := BroadcastShape(as, bs)
	if err != nil {
		return nil, nil, err
	}
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, nil, err
	}
	r := make([]R, n)
	if n == 0 {
		return out, r, nil
	}
	switch {
	case len(a) == n && len(b) == n:
		for i := range r {
			r[i] = f(a[i], b[i])
		}
		return out, r, nil
	case len(b) == 1 && len(a) == n:
		y := b[0]
		for i := range r {
			r[i] = f(a[i], y)
		}
		return out, r, nil
	case len(a) == 1 && len(b) == n:
		x := a[0]
		for i := range r {
			r[i] = f(x, b[i])
		}
		return out, r, nil
	}
	sa, sb := tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out)
	rank := len(out)
	inner := out[rank-1]
	ia, ib := sa[rank-1], sb[rank-1]
	idx := make([]int, rank)
	offA, offB := 0, 0
	for o := 0; o < n; o += inner {
		pa, pb := offA, offB
		for j := 0; j < inner; j++ {
			r[o+j] = f(a[pa], b[pb])
			pa += ia
			pb += ib
		}
		// advance the outer index (all dims but the last)
		for d := rank - 2; d >= 0; d-- {
			idx[d]++
			offA += sa[d]
			offB += sb[d]
			if idx[d] < out[d] {
				break
			}
			offA -= sa[d] * out[d]
			offB -= sb[d] * out[d]
			idx[d] = 0
		}
	}
	return out, r, nil
}

// BroadcastTo returns data (of shape) broadcast unidirectionally to out.
func BroadcastTo[T tensor.Elem](data []T, shape, out []int) ([]T, error) {
	bs, err := BroadcastShape(shape, out)
	if err != nil {
		return nil, err
	}
	if !EqualShape(bs, out) {
		return nil, InputErrorf("shape %s cannot be broadcast to %s", tensor.ShapeString(shape), tensor.ShapeString(out))
	}
	if len(data) == 1 {
		n, _ := tensor.NumElements(out)
		r := make([]T, n)
		for i := range r {
			r[i] = data[0]
		}
		return r, nil
	}
	// Walk out in order, stepping through data with broadcast strides.
	n, _ := tensor.NumElements(out)
	res := make([]T, n)
	st := tensor.BroadcastStrides(shape, out)
	idx := make([]int, len(out))
	off := 0
	for o := range res {
		res[o] = data[off]
		for d := len(out) - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < out[d] {
				break
			}
			off -= st[d] * out[d]
			idx[d] = 0
		}
	}
	return res, nil
}

// EqualShape reports whether a and b are the same shape.
func EqualShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
