package matmul

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Product implements numpy matmul semantics on c's engine: 1-D operands
// are promoted (and the added dimension removed from the result), leading
// dimensions broadcast; name names the operator in errors. It counts its
// work with c.Tick (each engine call, and the plain loops of the other
// types as they go) and stops with the request's error once the request
// ends. Other families multiply two activations with it (FusedMatMul).
func Product(c *ops.Context, name string, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := ops.SameType(name, a, b); err != nil {
		return nil, err
	}
	if a.DType == tensor.Float16 || a.DType == tensor.BFloat16 {
		// Half types multiply on the float32 kernels and round once.
		w, err := Product(c, name, ops.HalfTo32(a), ops.HalfTo32(b))
		if err != nil {
			return nil, err
		}
		return ops.ToHalf(w, a.DType), nil
	}
	if a.Rank() == 0 || b.Rank() == 0 {
		return nil, ops.InputErrorf("%s operands must have rank >= 1, got %s and %s", name, tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
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
		return nil, ops.InputErrorf("%s inner dimensions differ: %s × %s", name, tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	batch, err := ops.BroadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	outShape := append(append([]int(nil), batch...), m, n)
	var data any
	switch ad := a.Data.(type) {
	case []float32:
		data, err = batchedGemm(c, ad, b.Data.([]float32), as, bs, batch, m, n, k, floatGemm(c.Engine()))
	case []float64:
		data, err = batchedGemm(c, ad, b.Data.([]float64), as, bs, batch, m, n, k, gemmRef[float64])
	case []int32:
		data, err = batchedGemm(c, ad, b.Data.([]int32), as, bs, batch, m, n, k, gemmRef[int32])
	case []int64:
		data, err = batchedGemm(c, ad, b.Data.([]int64), as, bs, batch, m, n, k, gemmRef[int64])
	case []uint32:
		data, err = batchedGemm(c, ad, b.Data.([]uint32), as, bs, batch, m, n, k, gemmRef[uint32])
	case []uint64:
		data, err = batchedGemm(c, ad, b.Data.([]uint64), as, bs, batch, m, n, k, gemmRef[uint64])
	default:
		return nil, ops.InputErrorf("%s does not take %v", name, a.DType)
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

type gemmFunc[T tensor.Numeric] func(oc *ops.Context, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error

// floatGemm runs float32 products of two activations on the float tiles
// of e. Operands here are dense (lda = k, ldb = ldc = n). B is packed
// once per matrix: batches that broadcast one B over many A reuse the
// packing. The engine's product is counted before it runs.
func floatGemm(e *gemm.Engine) gemmFunc[float32] {
	var w *gemm.FWeights
	var packed *float32 // the first element of the B packed in w
	return func(oc *ops.Context, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) error {
		if err := oc.Tick(m * n * max(k, 1)); err != nil {
			return err
		}
		switch {
		case k*n == 0:
			w, packed = gemm.PackF(k, n, b, ldb), nil
		case &b[0] != packed:
			w, packed = gemm.RepackF(w, k, n, b, ldb), &b[0]
		}
		return e.MatMul(a[:m*k], m, w, c[:m*n])
	}
}

// gemmRef is the plain C = A·B loop for non-float32 types, a stripe of
// at most ops.TickEvery columns at a time; it looks at the request once
// about ops.TickEvery multiply-adds have gone by.
func gemmRef[T tensor.Numeric](oc *ops.Context, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) error {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		clear(ci)
		for j0 := 0; j0 < n; j0 += ops.TickEvery {
			j1 := min(j0+ops.TickEvery, n)
			cij := ci[j0:j1]
			work := j1 - j0
			for p := 0; p < k; p++ {
				av := a[i*lda+p]
				bp := b[p*ldb+j0 : p*ldb+j1]
				for j, bv := range bp {
					cij[j] += av * bv
				}
				if work += j1 - j0; work >= ops.TickEvery {
					if err := oc.Tick(work); err != nil {
						return err
					}
					work = 0
				}
			}
			if err := oc.Tick(work); err != nil {
				return err
			}
		}
	}
	return nil
}

func batchedGemm[T tensor.Numeric](oc *ops.Context, a, b []T, as, bs, batch []int, m, n, k int, gemm gemmFunc[T]) ([]T, error) {
	nb, err := tensor.NumElements(batch)
	if err != nil {
		return nil, ops.InputErrorf("the product's batch: %v", err)
	}
	total, err := tensor.NumElements([]int{nb, m, n})
	if err != nil {
		return nil, ops.InputErrorf("the product: %v", err)
	}
	if err := oc.Reserve(int64(total) * int64(tensor.DTypeOf[T]().Size())); err != nil {
		return nil, err
	}
	c := ops.Output[T](oc, total) // each product writes every element of its block
	if m == 0 || n == 0 {
		return c, nil
	}
	if k == 0 {
		clear(c) // a sum over nothing
	}
	if len(batch) == 0 {
		if err := gemm(oc, m, n, k, a, k, b, n, c, n); err != nil {
			return nil, err
		}
		return c, nil
	}
	// Offsets of each batch's A and B matrices under broadcasting.
	sa := tensor.BroadcastStrides(as[:len(as)-2], batch)
	sb := tensor.BroadcastStrides(bs[:len(bs)-2], batch)
	idx := make([]int, len(batch))
	offA, offB := 0, 0
	for i := 0; i < nb; i++ {
		if err := gemm(oc, m, n, k, a[offA*m*k:], k, b[offB*k*n:], n, c[i*m*n:], n); err != nil {
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
