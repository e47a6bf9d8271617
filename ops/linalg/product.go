package linalg

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// batchedProduct multiplies a [nb, m, k] by b [nb, k, n] of one type
// (FP32, FP64, INT32, INT64, UINT32 or UINT64) into [nb, m, n]: FP32 on
// the float kernels of the run's engine, with B packed for each matrix,
// the others on the reference loop; it looks at the request's context
// between matrices.
func batchedProduct(c *ops.Context, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	nb, m, k, n := a.Shape[0], a.Shape[1], a.Shape[2], b.Shape[2]
	total, err := tensor.NumElements([]int{nb, m, n})
	if err != nil {
		return nil, err
	}
	var data any
	switch ad := a.Data.(type) {
	case []float32:
		e := c.Engine()
		data, err = products(c, ad, b.Data.([]float32), total, nb, m, n, k, func(m, n, k int, a, b, y []float32) error {
			return e.MatMul(a[:m*k], m, gemm.PackF(k, n, b, n), y[:m*n])
		})
	case []float64:
		data, err = products(c, ad, b.Data.([]float64), total, nb, m, n, k, productRef[float64])
	case []int32:
		data, err = products(c, ad, b.Data.([]int32), total, nb, m, n, k, productRef[int32])
	case []int64:
		data, err = products(c, ad, b.Data.([]int64), total, nb, m, n, k, productRef[int64])
	case []uint32:
		data, err = products(c, ad, b.Data.([]uint32), total, nb, m, n, k, productRef[uint32])
	case []uint64:
		data, err = products(c, ad, b.Data.([]uint64), total, nb, m, n, k, productRef[uint64])
	default:
		return nil, ops.InputErrorf("MatMul does not take %v", a.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: a.DType, Shape: []int{nb, m, n}, Data: data}, nil
}

func products[T tensor.Numeric](c *ops.Context, a, b []T, total, nb, m, n, k int, mm func(m, n, k int, a, b, y []T) error) ([]T, error) {
	y := make([]T, total)
	if m == 0 || n == 0 {
		return y, nil
	}
	for i := 0; i < nb; i++ {
		if err := mm(m, n, k, a[i*m*k:], b[i*k*n:], y[i*m*n:]); err != nil {
			return nil, err
		}
		if err := c.Tick(m * n * k); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// productRef is y = a·b of dense row-major m×k and k×n matrices.
func productRef[T tensor.Numeric](m, n, k int, a, b, y []T) error {
	for i := 0; i < m; i++ {
		yi := y[i*n : i*n+n]
		clear(yi)
		for p := 0; p < k; p++ {
			av := a[i*k+p]
			bp := b[p*n : p*n+n]
			for j, bv := range bp {
				yi[j] += av * bv
			}
		}
	}
	return nil
}
