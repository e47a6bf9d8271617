package matmul

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// product implements numpy matmul semantics on engine e: 1-D operands
// are promoted (and the added dimension removed from the result), leading
// dimensions broadcast.
func product(e *gemm.Engine, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := ops.SameType("MatMul", a, b); err != nil {
		return nil, err
	}
	if a.DType == tensor.Float16 || a.DType == tensor.BFloat16 {
		// Half types multiply on the float32 kernels and round once.
		w, err := product(e, ops.HalfTo32(a), ops.HalfTo32(b))
		if err != nil {
			return nil, err
		}
		return ops.ToHalf(w, a.DType), nil
	}
	if a.Rank() == 0 || b.Rank() == 0 {
		return nil, ops.InputErrorf("MatMul operands must have rank >= 1, got %s and %s", tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	as, bs := a.Shape, b.Shape
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	m, k := as[len(as)-2], as[len(as)-1]
	k2, n := bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return nil, ops.InputErrorf("MatMul inner dimensions differ: %s × %s", tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	batch, err := ops.BroadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	outShape := append(append([]int(nil), batch...), m, n)
	var data any
	switch ad := a.Data.(type) {
	case []float32:
		data, err = batchedGemm(ad, b.Data.([]float32), as, bs, batch, m, n, k, floatGemm(e))
	case []float64:
		data, err = batchedGemm(ad, b.Data.([]float64), as, bs, batch, m, n, k, gemmRef[float64])
	case []int32:
		data, err = batchedGemm(ad, b.Data.([]int32), as, bs, batch, m, n, k, gemmRef[int32])
	case []int64:
		data, err = batchedGemm(ad, b.Data.([]int64), as, bs, batch, m, n, k, gemmRef[int64])
	case []uint32:
		data, err = batchedGemm(ad, b.Data.([]uint32), as, bs, batch, m, n, k, gemmRef[uint32])
	case []uint64:
		data, err = batchedGemm(ad, b.Data.([]uint64), as, bs, batch, m, n, k, gemmRef[uint64])
	default:
		return nil, ops.InputErrorf("MatMul does not take %v", a.DType)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case len(a.Shape) == 1 && len(b.Shape) == 1:
		outShape = batch
	case len(a.Shape) == 1:
		outShape = append(batch, n)
	case len(b.Shape) == 1:
		outShape = append(batch, m)
	}
	return &tensor.Tensor{DType: a.DType, Shape: outShape, Data: data}, nil
}

type gemmFunc[T tensor.Numeric] func(m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error

// floatGemm runs a float32 product of two activations on the float tiles
// of e, packing B for each call. Operands here are dense (lda = k, ldb =
// ldc = n).
func floatGemm(e *gemm.Engine) gemmFunc[float32] {
	return func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) error {
		return e.MatMul(a[:m*k], m, gemm.PackF(k, n, b, ldb), c[:m*n])
	}
}

// gemmRef is the plain C = A·B loop for non-float32 types.
func gemmRef[T tensor.Numeric](m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		clear(ci)
		for p := 0; p < k; p++ {
			av := a[i*lda+p]
			bp := b[p*ldb : p*ldb+n]
			for j, bv := range bp {
				ci[j] += av * bv
			}
		}
	}
	return nil
}

func batchedGemm[T tensor.Numeric](a, b []T, as, bs, batch []int, m, n, k int, gemm gemmFunc[T]) ([]T, error) {
	nb, err := tensor.NumElements(batch)
	if err != nil {
		return nil, err
	}
	total, err := tensor.NumElements([]int{nb, m, n})
	if err != nil {
		return nil, err
	}
	c := make([]T, total)
	if m == 0 || n == 0 {
		return c, nil
	}
	if len(batch) == 0 {
		return c, gemm(m, n, k, a, k, b, n, c, n)
	}
	// Offsets of each batch's A and B matrices under broadcasting.
	sa := tensor.BroadcastStrides(as[:len(as)-2], batch)
	sb := tensor.BroadcastStrides(bs[:len(bs)-2], batch)
	idx := make([]int, len(batch))
	offA, offB := 0, 0
	for i := 0; i < nb; i++ {
		if err := gemm(m, n, k, a[offA*m*k:], k, b[offB*k*n:], n, c[i*m*n:], n); err != nil {
			return nil, err
		}
		for d := len(batch) - 1; d >= 0; d-- {
			idx[d]++
			offA += sa[d]
			offB += sb[d]
			if idx[d] < batch[d] {
				break
			}
			offA -= sa[d] * batch[d]
			offB -= sb[d] * batch[d]
			idx[d] = 0
		}
	}
	return c, nil
}
