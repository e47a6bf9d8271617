//go:build autodiff

package autodiff

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/tensor"
)

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func equalShape(a, b []int) bool {
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

// walk calls f(o, i) for every element o of out with the index i of the
// element of shape (broadcast into out) it reads.
func walk(shape, out []int, f func(o, i int)) {
	n := numel(out)
	st := tensor.BroadcastStrides(shape, out)
	idx := make([]int, len(out))
	off := 0
	for o := 0; o < n; o++ {
		f(o, off)
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
}

// expand broadcasts x (of shape) to out.
func expand(x []float32, shape, out []int) []float32 {
	if equalShape(shape, out) {
		return x
	}
	r := make([]float32, numel(out))
	walk(shape, out, func(o, i int) { r[o] = x[i] })
	return r
}

// reduceTo sums g (of shape out) over the dimensions shape broadcast.
func reduceTo(g []float32, out, shape []int) []float32 {
	if equalShape(shape, out) {
		return g
	}
	r := make([]float64, numel(shape))
	walk(shape, out, func(o, i int) { r[i] += float64(g[o]) })
	return f32(r)
}

func f32(x []float64) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = float32(v)
	}
	return r
}

func floats(t *tensor.Tensor, what string) ([]float32, error) {
	if t == nil {
		return nil, fmt.Errorf("autodiff: %s has no value in the trace", what)
	}
	d, ok := t.Data.([]float32)
	if !ok {
		return nil, fmt.Errorf("autodiff: %s is %v; gradients flow through FP32 only", what, t.DType)
	}
	return d, nil
}

// matmul returns a (m×k) · b (k×n) on e's float kernels.
func matmul(e *gemm.Engine, a []float32, m, k int, b []float32, n int) []float32 {
	c := make([]float32, m*n)
	if m == 0 || n == 0 {
		return c
	}
	if err := e.MatMul(a, m, gemm.PackF(k, n, b, n), c); err != nil {
		panic(err) // shapes are the caller's invariant; a kernel panic stays one
	}
	return c
}

// transpose2 returns the transpose of a rows×cols matrix.
func transpose2(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t[j*rows+i] = a[i*cols+j]
		}
	}
	return t
}

func axisOf(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("autodiff: axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// geometry views shape as [outer, dim, inner] around axis (or, flattened,
// [outer, everything from axis on, 1]).
func geometry(shape []int, a int, flattened bool) (outer, dim, inner int) {
	outer, dim, inner = 1, 1, 1
	for i, d := range shape {
		switch {
		case i < a:
			outer *= d
		case i == a || flattened:
			dim *= d
		default:
			inner *= d
		}
	}
	return
}
