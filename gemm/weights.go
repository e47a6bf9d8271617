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
	// extra holds further packed parts of weights wider than [-127, 127]
	// (PackQInt): the weights are packed plus every extra part, and the
	// kernels run each as a further K block of the same sums.
	extra  [][]int8
	colsum []int32   // Σ_k b[k][n] (all parts): one row of cols, or one per block for PerBlock
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

// PackQInt packs integer weights q (K×N row-major, each in [-255, 255]:
// int8 or uint8 values less their zero point) with per-tensor (one) or
// per-channel (N) scales: W[k][n] = q[k][n]·scale. Values outside
// [-127, 127] are split exactly into parts that are not, each run as a
// further pass of the same int32 sums, so every table multiplies them
// exactly.
func PackQInt(k, n int, q []int32, scheme quant.Scheme, scales []float32) (*QWeights, error) {
	if len(q) != k*n {
		return nil, fmt.Errorf("gemm: %d integer weights for a %d×%d matrix", len(q), k, n)
	}
	if scheme == quant.PerBlock {
		return nil, fmt.Errorf("gemm: integer weights take per-tensor or per-channel scales")
	}
	rest := append([]int32(nil), q...)
	var parts [][]int8
	for {
		part := make([]int8, k*n)
		more := false
		for i, v := range rest {
			if v < -255 || v > 255 {
				return nil, fmt.Errorf("gemm: integer weight [%d,%d] = %d is outside [-255, 255]", i/n, i%n, v)
			}
			c := min(max(v, -127), 127)
			part[i], rest[i] = int8(c), v-c
			more = more || rest[i] != 0
		}
		parts = append(parts, part)
		if !more {
			break
		}
	}
	w, err := PackQ(&quant.Weights{Scheme: scheme, K: k, N: n, Q: parts[0], Scales: scales})
	if err != nil {
		return nil, err
	}
	for _, part := range parts[1:] {
		packed := make([]int8, len(w.packed))
		kernels.PackQB(k, n, part, packed)
		w.extra = append(w.extra, packed)
		for kk := 0; kk < k; kk++ {
			for j := 0; j < n; j++ {
				w.colsum[j] += int32(part[kk*n+j])
			}
		}
	}
	return w, nil
}

// parts returns the packed parts of q: its weights and any extra parts.
func (q *QWeights) parts() [][]int8 { return append([][]int8{q.packed}, q.extra...) }

// RepackF packs b (K×N, row stride ldb) as PackF does, into f's memory
// when f is not nil and holds enough (f is then returned), else into new
// memory: operands packed for each call reuse one buffer.
func RepackF(f *FWeights, k, n int, b []float32, ldb int) *FWeights {
	f = reuseF(f, k, n)
	if k > 0 && n > 0 {
		kernels.PackFB(k, n, b, ldb, f.packed)
	}
	return f
}

// RepackFT is RepackF for b = btᵀ, bt N×K with row stride ldbt, each
// eight rows of bt moved into the panels on e's Transpose8 (attention's
// keys, packed for every head of every run: one value at a time they
// were 4% of the encoder's int8 run).
func (e *Engine) RepackFT(f *FWeights, k, n int, bt []float32, ldbt int) *FWeights {
	f = reuseF(f, k, n)
	if k > 0 && n > 0 {
		kernels.PackFBTWith(e.t.Transpose8, k, n, bt, ldbt, f.packed)
	}
	return f
}

func reuseF(f *FWeights, k, n int) *FWeights {
	size := kernels.PackedFBLen(k, n)
	if f == nil || cap(f.packed) < size {
		return &FWeights{K: k, N: n, packed: make([]float32, size)}
	}
	f.K, f.N, f.packed = k, n, f.packed[:size]
	return f
}

// Bytes returns the memory the packed weights hold.
func (q *QWeights) Bytes() int {
	b := len(q.packed) + 4*len(q.colsum) + 4*len(q.scales)
	for _, e := range q.extra {
		b += len(e)
	}
	return b
}

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
