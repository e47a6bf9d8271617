package dispatch

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// ErrNotFinite reports NaN or ±Inf in activations of a quantized product.
var ErrNotFinite = errors.New("dispatch: activations contain NaN or Inf, which int8 cannot represent")

// MaxQK bounds K of a quantized product: 128·127·K must fit an int32.
const MaxQK = 1 << 17

// QWeights are int8 weights packed for the quantized tiles.
type QWeights struct {
	K, N   int
	Scheme quant.Scheme
	np     int // N rounded up to whole panels
	packed []int8
	colsum []int32   // Σ_k b[k][n]: one row of np, or blocks rows for PerBlock
	scales []float32 // one row of np, or blocks rows for PerBlock
}

// PackQ packs quantized weights for Exec.QMatMul.
func PackQ(w *quant.Weights) (*QWeights, error) {
	if w.K > MaxQK {
		return nil, fmt.Errorf("dispatch: K = %d exceeds %d for int8 products", w.K, MaxQK)
	}
	q := &QWeights{K: w.K, N: w.N, Scheme: w.Scheme, packed: make([]int8, kernels.PackedQBLen(w.K, w.N))}
	kernels.PackQB(w.K, w.N, w.Q, q.packed)
	// colsum and scales get one row per block (one row in all for the
	// per-channel schemes), each padded to whole panels.
	q.np = (w.N + kernels.PanelN - 1) / kernels.PanelN * kernels.PanelN
	rows, scales := 1, w.Scales
	if w.Scheme == quant.PerBlock {
		rows = w.Blocks()
	} else {
		scales = w.ChannelScales()
	}
	q.colsum = make([]int32, rows*q.np)
	q.scales = make([]float32, rows*q.np)
	for k := 0; k < w.K; k++ {
		blk := 0
		if w.Scheme == quant.PerBlock {
			blk = k / quant.BlockSize
		}
		for n := 0; n < w.N; n++ {
			q.colsum[blk*q.np+n] += int32(w.Q[k*w.N+n])
		}
	}
	for r := 0; r < rows; r++ {
		copy(q.scales[r*q.np:], scales[r*w.N:(r+1)*w.N])
	}
	return q, nil
}

// Bytes returns the memory the packed weights hold.
func (q *QWeights) Bytes() int { return len(q.packed) + 4*len(q.colsum) + 4*len(q.scales) }

// FWeights are float32 weights packed for the float tiles.
type FWeights struct {
	K, N   int
	packed []float32
}

// PackF packs b (K×N, row stride ldb) for Exec.MatMul.
func PackF(k, n int, b []float32, ldb int) *FWeights {
	f := &FWeights{K: k, N: n, packed: make([]float32, kernels.PackedFBLen(k, n))}
	kernels.PackFB(k, n, b, ldb, f.packed)
	return f
}

// Exec runs products on a kernel table with a bounded worker pool.
type Exec struct {
	T    *Table
	pool *Pool
}

// NewExec returns an Exec using t and at most threads cores.
func NewExec(t *Table, threads int) *Exec { return &Exec{T: t, pool: NewPool(threads)} }

// Threads returns the number of cores products may use.
func (e *Exec) Threads() int { return e.pool.Size() }

// minParallelMACs is the size below which a product runs on one core:
// smaller ones finish before a second worker would have started.
const minParallelMACs = 1 << 20

// split runs f over panel ranges [p0, p1) of np panels, in parallel when
// the product is large enough.
func (e *Exec) split(np int, macs int, f func(p0, p1 int)) {
	parts := 1
	if macs >= minParallelMACs {
		parts = min(e.pool.Size(), np)
	}
	if parts <= 1 {
		f(0, np)
		return
	}
	tasks := make([]func(), parts)
	for i := range tasks {
		p0, p1 := np*i/parts, np*(i+1)/parts
		tasks[i] = func() { f(p0, p1) }
	}
	e.pool.Run(tasks)
}

// QActivations are activation rows quantized for the tiles.
type QActivations struct {
	M, K, ldu int
	u         []uint8
	zp        []int32
	off       []int32 // QOffset - zp, per row
	scale     []float32
}

var actPool = sync.Pool{New: func() any { return new(QActivations) }}

// QuantizeRows quantizes a (M×K row-major) per row with the table's
// kernels. Non-finite activations are ErrNotFinite.
func (e *Exec) QuantizeRows(a []float32, m, k int) (*QActivations, error) {
	qa := actPool.Get().(*QActivations)
	ldu := kernels.PackedKLen(k)
	qa.M, qa.K, qa.ldu = m, k, ldu
	qa.u = grow(qa.u, m*ldu)
	qa.zp = grow(qa.zp, m)
	qa.off = grow(qa.off, m)
	qa.scale = grow(qa.scale, m)
	for i := 0; i < m; i++ {
		row := a[i*k : i*k+k]
		lo, hi, finite := e.T.MinMax(row)
		if !finite {
			actPool.Put(qa)
			return nil, fmt.Errorf("%w (row %d)", ErrNotFinite, i)
		}
		s, inv, zp := quant.RowParams(lo, hi)
		u := qa.u[i*ldu : i*ldu+ldu]
		e.T.QuantizeU8(row, inv, zp, u)
		clear(u[k:])
		qa.zp[i], qa.off[i], qa.scale[i] = zp, e.T.QOffset-zp, s
	}
	return qa, nil
}

// Release returns qa's buffers for reuse.
func (qa *QActivations) Release() { actPool.Put(qa) }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// QMatMul computes c (M×N) = dequant(quantize_rows(a) × w) for a M×K.
func (e *Exec) QMatMul(a []float32, m int, w *QWeights, c []float32) error {
	qa, err := e.QuantizeRows(a, m, w.K)
	if err != nil {
		return err
	}
	defer qa.Release()
	e.QMatMulQuantized(qa, w, c)
	return nil
}

// QMatMulQuantized computes c (M×N) from already quantized activations.
func (e *Exec) QMatMulQuantized(qa *QActivations, w *QWeights, c []float32) {
	np := (w.N + kernels.PanelN - 1) / kernels.PanelN
	e.split(np, qa.M*w.N*w.K, func(p0, p1 int) {
		if w.Scheme == quant.PerBlock {
			e.qBlockPanels(qa, w, c, p0, p1)
		} else {
			e.qPanels(qa, w, c, p0, p1)
		}
	})
}

func (e *Exec) qPanels(qa *QActivations, w *QWeights, c []float32, p0, p1 int) {
	var acc [4 * kernels.PanelN]int32
	var scratch [4 * kernels.PanelN]float32
	kq := qa.ldu / kernels.KGroup
	n := w.N
	tiles := qa.M / 4
	for p := p0; p < p1; p++ {
		bp := w.packed[p*qa.ldu*kernels.PanelN : (p+1)*qa.ldu*kernels.PanelN]
		c0 := p * kernels.PanelN
		cols := min(kernels.PanelN, n-c0)
		cs, sb := w.colsum[c0:c0+kernels.PanelN], w.scales[c0:c0+kernels.PanelN]
		if cols == kernels.PanelN {
			e.T.QPanel(qa.u, qa.ldu, tiles, bp, kq, qa.off, qa.scale, cs, sb, c[c0:], n)
		} else {
			for t := 0; t < tiles; t++ {
				m0 := 4 * t
				e.T.QPanel(qa.u[m0*qa.ldu:], qa.ldu, 1, bp, kq, qa.off[m0:], qa.scale[m0:], cs, sb, scratch[:], kernels.PanelN)
				for r := 0; r < 4; r++ {
					copy(c[(m0+r)*n+c0:(m0+r)*n+c0+cols], scratch[r*kernels.PanelN:])
				}
			}
		}
		for m0 := 4 * tiles; m0 < qa.M; m0++ {
			e.T.QTile1(qa.u[m0*qa.ldu:(m0+1)*qa.ldu], bp, kq, acc[:kernels.PanelN])
			e.qEpilogue(qa, w, c, m0, c0, cols, acc[:])
		}
	}
}

// qEpilogue writes c[m][c0:c0+cols] = float32(acc + (QOffset-zp)·colsum)·sa·sb.
func (e *Exec) qEpilogue(qa *QActivations, w *QWeights, c []float32, m, c0, cols int, acc []int32) {
	off := e.T.QOffset - qa.zp[m]
	sa := qa.scale[m]
	out := c[m*w.N+c0 : m*w.N+c0+cols]
	cs, sb := w.colsum[c0:c0+cols], w.scales[c0:c0+cols]
	for j := range out {
		out[j] = float32(acc[j]+off*cs[j]) * sa * sb[j]
	}
}

func (e *Exec) qBlockPanels(qa *QActivations, w *QWeights, c []float32, p0, p1 int) {
	var acc [4 * kernels.PanelN]int32
	var sum [4 * kernels.PanelN]float32
	n := w.N
	kqTotal := qa.ldu / kernels.KGroup
	const kqBlock = quant.BlockSize / kernels.KGroup
	nb := (w.K + quant.BlockSize - 1) / quant.BlockSize
	for p := p0; p < p1; p++ {
		bp := w.packed[p*qa.ldu*kernels.PanelN : (p+1)*qa.ldu*kernels.PanelN]
		c0 := p * kernels.PanelN
		cols := min(kernels.PanelN, n-c0)
		for m0 := 0; m0 < qa.M; {
			rows := 4
			if m0+4 > qa.M {
				rows = 1
			}
			clear(sum[:])
			for b := 0; b < nb; b++ {
				g0 := b * kqBlock
				kq := min(kqBlock, kqTotal-g0)
				bpb := bp[g0*64:]
				if rows == 4 {
					e.T.QTile4(qa.u[m0*qa.ldu+g0*4:], qa.ldu, bpb, kq, acc[:])
				} else {
					e.T.QTile1(qa.u[m0*qa.ldu+g0*4:(m0+1)*qa.ldu], bpb, kq, acc[:kernels.PanelN])
				}
				cs := w.colsum[b*w.np+c0 : b*w.np+c0+cols]
				sb := w.scales[b*w.np+c0 : b*w.np+c0+cols]
				for r := 0; r < rows; r++ {
					off := e.T.QOffset - qa.zp[m0+r]
					for j := 0; j < cols; j++ {
						sum[r*kernels.PanelN+j] += float32(float32(acc[r*kernels.PanelN+j]+off*cs[j]) * sb[j])
					}
				}
			}
			for r := 0; r < rows; r++ {
				sa := qa.scale[m0+r]
				out := c[(m0+r)*n+c0 : (m0+r)*n+c0+cols]
				for j := range out {
					out[j] = sa * sum[r*kernels.PanelN+j]
				}
			}
			m0 += rows
		}
	}
}

// MatMul computes c (M×N, row stride N) = a (M×K) × w with the float tiles.
func (e *Exec) MatMul(a []float32, m int, w *FWeights, c []float32) {
	k, n := w.K, w.N
	np := (n + kernels.PanelN - 1) / kernels.PanelN
	fr := e.T.FRows
	e.split(np, m*n*k, func(p0, p1 int) {
		scratch := make([]float32, fr*kernels.PanelN)
		for p := p0; p < p1; p++ {
			bp := w.packed[p*k*kernels.PanelN : (p+1)*k*kernels.PanelN]
			c0 := p * kernels.PanelN
			cols := min(kernels.PanelN, n-c0)
			m0 := 0
			for ; m0+fr <= m; m0 += fr {
				if cols == kernels.PanelN {
					e.T.FTileN(a[m0*k:(m0+fr)*k], k, bp, k, c[m0*n+c0:], n)
					continue
				}
				e.T.FTileN(a[m0*k:(m0+fr)*k], k, bp, k, scratch, kernels.PanelN)
				for r := 0; r < fr; r++ {
					copy(c[(m0+r)*n+c0:(m0+r)*n+c0+cols], scratch[r*kernels.PanelN:])
				}
			}
			for ; m0 < m; m0++ {
				e.T.FTile1(a[m0*k:(m0+1)*k], bp, k, scratch[:kernels.PanelN])
				copy(c[m0*n+c0:m0*n+c0+cols], scratch)
			}
		}
	})
}

// Clone returns a copy of q in new memory (the benchmark cycles through
// copies to keep weights out of cache).
func (q *QWeights) Clone() *QWeights {
	c := *q
	c.packed = append([]int8(nil), q.packed...)
	return &c
}

// Clone returns a copy of f in new memory.
func (f *FWeights) Clone() *FWeights {
	c := *f
	c.packed = append([]float32(nil), f.packed...)
	return &c
}

var (
	defaultExecOnce sync.Once
	defaultExec     *Exec
)

// DefaultExec returns an Exec on Default() using GOMAXPROCS cores, created
// on first use.
func DefaultExec() *Exec {
	defaultExecOnce.Do(func() { defaultExec = NewExec(selected, runtime.GOMAXPROCS(0)) })
	return defaultExec
}
