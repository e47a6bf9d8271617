package model

import (
	"errors"
	"fmt"
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "MatMul", Since: 1, Fold: true}, buildMatMul)
	register(Descriptor{Type: "Gemm", Since: 7, Fold: true}, buildGemm)
}

// GemmAttrs are Gemm's attributes.
type GemmAttrs struct {
	Alpha  float32 `onnx:"alpha" default:"1"`
	Beta   float32 `onnx:"beta" default:"1"`
	TransA bool    `onnx:"transA"`
	TransB bool    `onnx:"transB"`
}

func buildMatMul(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if b := n.consts[1]; b != nil && b.DType == tensor.Float32 && b.Rank() == 2 {
		lin, err := newLinear(n, b, n.qdqInput(1, false))
		if err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			t, err := lin.apply(in[0])
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
	exec := n.opts.Exec
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		t, err := matmul(exec, in[0], in[1])
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

// matmul implements numpy matmul semantics: 1-D operands are promoted (and
// the added dimension removed from the result), leading dimensions broadcast.
func matmul(exec *gemm.Engine, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := sameType("MatMul", a, b); err != nil {
		return nil, err
	}
	if a.DType == tensor.Float16 || a.DType == tensor.BFloat16 {
		// Half types multiply on the float32 kernels and round once.
		w, err := matmul(exec, elemHalfTo32(a), elemHalfTo32(b))
		if err != nil {
			return nil, err
		}
		return elemToHalf(w, a.DType), nil
	}
	if a.Rank() == 0 || b.Rank() == 0 {
		return nil, inputErrorf("MatMul operands must have rank >= 1, got %s and %s", tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
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
		return nil, inputErrorf("MatMul inner dimensions differ: %s × %s", tensor.ShapeString(a.Shape), tensor.ShapeString(b.Shape))
	}
	batch, err := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, err
	}
	outShape := append(append([]int(nil), batch...), m, n)
	var data any
	switch ad := a.Data.(type) {
	case []float32:
		data, err = batchedGemm(ad, b.Data.([]float32), as, bs, batch, m, n, k, floatGemm(exec))
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
		return nil, inputErrorf("MatMul does not take %v", a.DType)
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

// floatGemm runs a float32 product of two activations on the float tiles,
// packing B for each call. Operands here are dense (lda = k, ldb = ldc = n).
func floatGemm(exec *gemm.Engine) gemmFunc[float32] {
	return func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) error {
		return exec.MatMul(a[:m*k], m, gemm.PackF(k, n, b, ldb), c[:m*n])
	}
}

// linear is a product with a constant 2-D float32 weight, prepared at
// load: quantized and packed for the int8 tiles, or packed for the float
// tiles.
type linear struct {
	exec *gemm.Engine
	k, n int
	q    *gemm.QWeights
	f    *gemm.FWeights

	// For backward passes (builds with the autodiff tag): the weight as
	// loaded, and Wᵀ packed on first use.
	wq    *quant.Weights
	wf    []float32
	tOnce sync.Once
	tq    *gemm.QWeights
	tf    *gemm.FWeights
	tErr  error
}

// newLinear prepares w (K×N) for node n and records the choice in the
// model's layers. qdq, when not nil, holds the int8 weights w was
// dequantized from (a QDQ model): they run on the int8 kernels as they are.
func newLinear(n *node, w *tensor.Tensor, qdq *intWeights) (*linear, error) {
	k, cols := w.Shape[0], w.Shape[1]
	l := &linear{exec: n.opts.Exec, k: k, n: cols}
	layer := Layer{Node: n.name, Op: n.pb.OpType, K: k, N: cols, Kernels: "float32"}
	data := w.Data.([]float32)
	n.unused[1] = true // the weight lives in l from here on
	n.lin = l
	if n.opts.Quantize && qdq != nil && k <= gemm.MaxQK {
		var err error
		if nw := qdq.narrow(); nw != nil {
			if l.q, err = gemm.PackQ(nw); err != nil {
				return nil, err
			}
			if dispatch.AutodiffBuilt {
				l.wq = nw
			}
		} else { // wider than int8 (zero points, uint8): in parts
			if l.q, err = gemm.PackQInt(qdq.K, qdq.N, qdq.Q, qdq.Scheme, qdq.Scales); err != nil {
				return nil, err
			}
			if dispatch.AutodiffBuilt {
				l.wf = data // backward runs through the dequantized weights
			}
		}
		layer.Kernels = "int8 " + qdq.Scheme.String() + " (QDQ weights)"
	} else if n.opts.Quantize && k*cols >= MinQuantizedWeights && k <= gemm.MaxQK {
		qw, err := quant.QuantizeWeights(data, k, cols, n.opts.Scheme)
		if err != nil {
			return nil, fmt.Errorf("quantizing weight %q: %w", n.pb.Inputs[1], err)
		}
		if l.q, err = gemm.PackQ(qw); err != nil {
			return nil, err
		}
		if dispatch.AutodiffBuilt {
			l.wq = qw
		}
		layer.Kernels = "int8 " + n.opts.Scheme.String()
	} else {
		l.f = gemm.PackF(k, cols, data, cols)
		if dispatch.AutodiffBuilt {
			l.wf = data
		}
	}
	n.model.Layers = append(n.model.Layers, layer)
	return l, nil
}

// backwardInput returns dX = dY·Wᵀ (M×K) for dY (M×N). With int8
// weights W = q·s (s per column), dY·Wᵀ = (dY∘s)·qᵀ: dY is scaled per
// output channel and the product runs on the int8 kernels.
func (l *linear) backwardInput(dy []float32, m int) ([]float32, error) {
	if len(dy) != m*l.n {
		return nil, fmt.Errorf("model: backward of a %d×%d weight got %d values for %d rows", l.k, l.n, len(dy), m)
	}
	l.tOnce.Do(func() {
		if l.wq != nil && l.wq.Scheme == quant.PerBlock {
			// scales vary along K: back through the dequantized weights in float32
			l.wf, l.wq = l.wq.Dequantize(), nil
		}
		switch {
		case l.wq != nil:
			t := &quant.Weights{Scheme: quant.PerTensor, K: l.n, N: l.k, Q: make([]int8, len(l.wq.Q)), Scales: []float32{1}}
			for i := 0; i < l.k; i++ {
				for j := 0; j < l.n; j++ {
					t.Q[j*l.k+i] = l.wq.Q[i*l.n+j]
				}
			}
			l.tq, l.tErr = gemm.PackQ(t)
		case l.wf != nil:
			t := make([]float32, len(l.wf))
			for i := 0; i < l.k; i++ {
				for j := 0; j < l.n; j++ {
					t[j*l.k+i] = l.wf[i*l.n+j]
				}
			}
			l.tf = gemm.PackF(l.n, l.k, t, l.k)
		default:
			l.tErr = dispatch.ErrAutodiffUnavailable
		}
	})
	if l.tErr != nil {
		return nil, l.tErr
	}
	dx := make([]float32, m*l.k)
	if m == 0 {
		return dx, nil
	}
	if l.tq != nil {
		scaled := make([]float32, len(dy))
		for i := 0; i < m; i++ {
			for j := 0; j < l.n; j++ {
				scaled[i*l.n+j] = dy[i*l.n+j] * l.wq.Scale(0, j)
			}
		}
		if err := l.exec.QMatMul(scaled, m, l.tq, dx); err != nil {
			return nil, err
		}
		return dx, nil
	}
	if err := l.exec.MatMul(dy, m, l.tf, dx); err != nil {
		return nil, err
	}
	return dx, nil
}

// apply computes a·W for float32 a of shape [..., K] (or [K]).
func (l *linear) apply(a *tensor.Tensor) (*tensor.Tensor, error) {
	ad, ok := a.Data.([]float32)
	if !ok {
		return nil, inputErrorf("MatMul with a FP32 weight takes FP32 input, got %v", a.DType)
	}
	if a.Rank() == 0 || a.Shape[a.Rank()-1] != l.k {
		return nil, inputErrorf("MatMul inner dimensions differ: %s × [%d,%d]", tensor.ShapeString(a.Shape), l.k, l.n)
	}
	m := len(ad) / max(l.k, 1)
	if l.k == 0 {
		m, _ = tensor.NumElements(a.Shape[:a.Rank()-1])
	}
	shape := append(append([]int(nil), a.Shape[:a.Rank()-1]...), l.n)
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, err
	}
	out := make([]float32, size)
	if m == 0 || l.k == 0 || l.n == 0 {
		// an empty product, or a sum over nothing: zeros of the right shape
		return tensor.From(shape, out), nil
	}
	if l.q != nil {
		if err := l.exec.QMatMul(ad, m, l.q, out); err != nil {
			if errors.Is(err, gemm.ErrNotFinite) {
				return nil, inputErrorf("%v", err)
			}
			return nil, err
		}
	} else if err := l.exec.MatMul(ad, m, l.f, out); err != nil {
		return nil, err
	}
	return tensor.From(shape, out), nil
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

// buildGemm implements Y = alpha·A'·B' + beta·C with A' = transA ? Aᵀ : A
// and B' likewise; C broadcasts unidirectionally to [M, N] and is optional
// from opset 11.
func buildGemm(n *node, at *GemmAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	alpha, beta, transA, transB := at.Alpha, at.Beta, at.TransA, at.TransB
	// A constant B is transposed once, here, rather than on every call,
	// and a float32 one is prepared for the kernels.
	var constB *tensor.Tensor
	var lin *linear
	if b := n.consts[1]; b != nil && b.Rank() == 2 {
		constB = b
		if transB {
			constB = transpose2D(b)
		}
		if constB.DType == tensor.Float32 {
			var err error
			if lin, err = newLinear(n, constB, n.qdqInput(1, transB)); err != nil {
				return nil, err
			}
		}
	}
	exec := n.opts.Exec
	if lin != nil {
		constB = nil // the kernels hold the weight now
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, c := in[0], (*tensor.Tensor)(nil)
		if len(in) > 2 {
			c = in[2]
		}
		if a.Rank() != 2 {
			return nil, inputErrorf("Gemm takes a 2-D A, got %s", tensor.ShapeString(a.Shape))
		}
		if transA {
			a = transpose2D(a)
		}
		var y *tensor.Tensor
		var err error
		if lin != nil {
			if err := sameType("Gemm", a, c); err != nil {
				return nil, err
			}
			y, err = lin.apply(a)
		} else {
			b := in[1]
			if err := sameType("Gemm", a, b, c); err != nil {
				return nil, err
			}
			if b.Rank() != 2 {
				return nil, inputErrorf("Gemm takes a 2-D B, got %s", tensor.ShapeString(b.Shape))
			}
			if constB != nil {
				b = constB
			} else if transB {
				b = transpose2D(b)
			}
			y, err = matmul(exec, a, b)
		}
		if err != nil {
			return nil, err
		}
		switch yd := y.Data.(type) {
		case []float32:
			err = gemmEpilogue(yd, y.Shape, alpha, beta, c)
		case []float64:
			err = gemmEpilogue(yd, y.Shape, float64(alpha), float64(beta), c)
		case []int32:
			err = gemmEpilogue(yd, y.Shape, int32(alpha), int32(beta), c)
		case []int64:
			err = gemmEpilogue(yd, y.Shape, int64(alpha), int64(beta), c)
		case []uint32:
			err = gemmEpilogue(yd, y.Shape, uint32(alpha), uint32(beta), c)
		case []uint64:
			err = gemmEpilogue(yd, y.Shape, uint64(alpha), uint64(beta), c)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// gemmEpilogue computes y = alpha·y + beta·C in place, C broadcast to y.
func gemmEpilogue[T tensor.Numeric](y []T, shape []int, alpha, beta T, c *tensor.Tensor) error {
	if alpha != 1 {
		for i := range y {
			y[i] *= alpha
		}
	}
	if c == nil || beta == 0 {
		return nil
	}
	// A bias row (N or 1×N) is added row by row, without broadcasting it
	// to a whole M×N copy first: the same operations on every element.
	if len(shape) == 2 && shape[1] > 0 && (c.Rank() == 1 && c.Shape[0] == shape[1] || c.Rank() == 2 && c.Shape[0] == 1 && c.Shape[1] == shape[1]) {
		cd := c.Data.([]T)
		for r := 0; r+shape[1] <= len(y); r += shape[1] {
			row := y[r : r+shape[1]]
			for j := range row {
				row[j] += beta * cd[j]
			}
		}
		return nil
	}
	cd, err := broadcastTo(c.Data.([]T), c.Shape, shape)
	if err != nil {
		return err
	}
	for i := range y {
		y[i] += beta * cd[i]
	}
	return nil
}

func transpose2D(t *tensor.Tensor) *tensor.Tensor {
	r, c := t.Shape[0], t.Shape[1]
	out := &tensor.Tensor{DType: t.DType, Shape: []int{c, r}}
	switch d := t.Data.(type) {
	case []float32:
		out.Data = transposeData(d, r, c)
	case []float64:
		out.Data = transposeData(d, r, c)
	case []int32:
		out.Data = transposeData(d, r, c)
	case []int64:
		out.Data = transposeData(d, r, c)
	case []uint32:
		out.Data = transposeData(d, r, c)
	case []uint64:
		out.Data = transposeData(d, r, c)
	case []int8:
		out.Data = transposeData(d, r, c)
	case []uint8:
		out.Data = transposeData(d, r, c)
	default:
		return t
	}
	return out
}

func transposeData[T tensor.Elem](d []T, r, c int) []T {
	out := make([]T, len(d))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = d[i*c+j]
		}
	}
	return out
}
