package gemm

import (
	"errors"
	"fmt"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// ErrNotFinite reports NaN or ±Inf in activations of a quantized product.
var ErrNotFinite = errors.New("gemm: activations contain NaN or Inf, which int8 cannot represent")

// MaxQK bounds K of a quantized product: 128·127·K must fit an int32.
const MaxQK = 1 << 17

// QWeights are int8 weights packed for the quantized block kernels.
type QWeights struct {
	K, N   int
	Scheme quant.Scheme
	kp     int // K rounded up to groups of 4
	cols   int // N rounded up to whole panels
	packed []int8
	colsum []int32   // Σ_k b[k][n]: one row of cols, or one per block for PerBlock
	scales []float32 // one row of cols, or one per block for PerBlock
}

// PackQ packs quantized weights for QMatMul.
func PackQ(w *quant.Weights) (*QWeights, error) {
	if w.K > MaxQK {
		return nil, fmt.Errorf("gemm: K = %d exceeds %d for int8 products", w.K, MaxQK)
	}
	if len(w.Q) != w.K*w.N {
		return nil, fmt.Errorf("gemm: %d int8 weights for a %d×%d matrix", len(w.Q), w.K, w.N)
	}
	q := &QWeights{K: w.K, N: w.N, Scheme: w.Scheme, kp: kernels.PackedKLen(w.K), packed: make([]int8, kernels.PackedQBLen(w.K, w.N))}
	kernels.PackQB(w.K, w.N, w.Q, q.packed)
	// colsum and scales get one row per block (one row in all for the
	// per-channel schemes), each padded to whole panels.
	q.cols = (w.N + kernels.PanelN - 1) / kernels.PanelN * kernels.PanelN
	rows, scales := 1, w.Scales
	if w.Scheme == quant.PerBlock {
		rows = w.Blocks()
		if len(scales) != rows*w.N {
			return nil, fmt.Errorf("gemm: %d per-block scales for %d blocks × %d columns", len(scales), rows, w.N)
		}
	} else {
		if w.Scheme == quant.PerTensor && len(scales) != 1 || w.Scheme == quant.PerChannel && len(scales) != w.N {
			return nil, fmt.Errorf("gemm: %d %v scales for %d columns", len(scales), w.Scheme, w.N)
		}
		scales = w.ChannelScales()
	}
	q.colsum = make([]int32, rows*q.cols)
	q.scales = make([]float32, rows*q.cols)
	for k := 0; k < w.K; k++ {
		blk := 0
		if w.Scheme == quant.PerBlock {
			blk = k / quant.BlockSize
		}
		for n := 0; n < w.N; n++ {
			q.colsum[blk*q.cols+n] += int32(w.Q[k*w.N+n])
		}
	}
	for r := 0; r < rows; r++ {
		copy(q.scales[r*q.cols:], scales[r*w.N:(r+1)*w.N])
	}
	return q, nil
}

// Bytes returns the memory the packed weights hold.
func (q *QWeights) Bytes() int { return len(q.packed) + 4*len(q.colsum) + 4*len(q.scales) }

// Clone returns a copy of q in new memory (the benchmark cycles through
// copies to keep weights out of cache).
func (q *QWeights) Clone() *QWeights {
	c := *q
	c.packed = append([]int8(nil), q.packed...)
	return &c
}

// FWeights are float32 weights packed for the float block kernels.
type FWeights struct {
	K, N   int
	packed []float32
}

// PackF packs b (K×N, row stride ldb) for MatMul.
func PackF(k, n int, b []float32, ldb int) *FWeights {
	f := &FWeights{K: k, N: n, packed: make([]float32, kernels.PackedFBLen(k, n))}
	if k > 0 && n > 0 {
		kernels.PackFB(k, n, b, ldb, f.packed)
	}
	return f
}

// Bytes returns the memory the packed weights hold.
func (f *FWeights) Bytes() int { return 4 * len(f.packed) }

// Clone returns a copy of f in new memory.
func (f *FWeights) Clone() *FWeights {
	c := *f
	c.packed = append([]float32(nil), f.packed...)
	return &c
}
