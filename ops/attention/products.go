package attention

import (
	"sync"

	"github.com/quantserve/quantserve/gemm"
)

// attnKernels computes one head's two products.
type attnKernels[T float32 | float64] interface {
	// prepareK and prepareV ready key/value head g of batch b.
	prepareK(b, g int)
	prepareV(b, g int)
	// qk sets s (m×t) = q·Kᵀ for q (m×d, row stride ldq).
	qk(q []T, ldq, m int, s []T)
	// pv sets y (m×dv, row stride ldy) = p·V for p (m×t).
	pv(p []T, m int, y []T, ldy int)
	// err reports the first failure of a product (a kernel that
	// panicked), nil when there was none.
	err() error
	// release gives the kernels back once their runner is done with
	// them; they are not used after.
	release()
}

// attnF32 runs the products on the float kernels of an engine, reading Q
// and writing Y in place by their row strides (rank-3 heads are columns
// of a row).
type attnF32 struct {
	exec   *gemm.Engine
	k, v   attnView[float32]
	sh     attnShape
	kp, vp *gemm.FWeights // Kᵀ and V of one head, packed (buffers reused)
	failed error
}

// attnF32s keeps released kernels with their packed heads' buffers: a
// transformer's runs pack every head's keys and values, run after run,
// into buffers of the same sizes (a megabyte a run for a 4-layer encoder
// of 128 tokens, otherwise fresh memory every time).
var attnF32s = sync.Pool{New: func() any { return new(attnF32) }}

func newAttnF32(exec *gemm.Engine, k, v attnView[float32], sh attnShape) *attnF32 {
	a := attnF32s.Get().(*attnF32)
	a.exec, a.k, a.v, a.sh, a.failed = exec, k, v, sh, nil
	return a
}

// release keeps a's packing buffers for the next runner and drops the
// rest: the pool holds no engine or tensor alive.
func (a *attnF32) release() {
	*a = attnF32{kp: a.kp, vp: a.vp}
	attnF32s.Put(a)
}

// f32Kernels is a kernelsOn of the float kernels of e.
func f32Kernels(e *gemm.Engine, sh attnShape, k, v attnView[float32]) attnKernels[float32] {
	return newAttnF32(e, k, v, sh)
}

func (a *attnF32) err() error { return a.failed }

func (a *attnF32) matmul(x []float32, m, ldx int, w *gemm.FWeights, y []float32, ldy int) {
	if err := a.exec.MatMulStrided(x, m, ldx, w, y, ldy); err != nil && a.failed == nil {
		a.failed = err
	}
}

func (a *attnF32) prepareK(b, g int) {
	t, d := a.sh.t, a.sh.d
	if t == 0 || d == 0 {
		return
	}
	base := a.k.at(b, g)
	a.kp = a.exec.RepackFT(a.kp, d, t, a.k.data[base:base+(t-1)*a.k.ss+d], a.k.ss)
}

func (a *attnF32) prepareV(b, g int) {
	if a.sh.t == 0 || a.sh.dv == 0 {
		return
	}
	base := a.v.at(b, g)
	a.vp = gemm.RepackF(a.vp, a.sh.t, a.sh.dv, a.v.data[base:base+(a.sh.t-1)*a.v.ss+a.sh.dv], a.v.ss)
}

func (a *attnF32) qk(q []float32, ldq, sq int, s []float32) {
	t, d := a.sh.t, a.sh.d
	s = s[:sq*t]
	if d == 0 || t == 0 || sq == 0 {
		clear(s)
		return
	}
	a.matmul(q[:(sq-1)*ldq+d], sq, ldq, a.kp, s, t)
}

func (a *attnF32) pv(p []float32, sq int, y []float32, ldy int) {
	t, dv := a.sh.t, a.sh.dv
	if sq == 0 || dv == 0 {
		return
	}
	if t == 0 {
		for i := 0; i < sq; i++ {
			clear(y[i*ldy : i*ldy+dv])
		}
		return
	}
	a.matmul(p[:sq*t], sq, t, a.vp, y[:(sq-1)*ldy+dv], ldy)
}

// attnRef computes the products with plain loops, in T.
type attnRef[T float32 | float64] struct {
	k, v attnView[T]
	sh   attnShape
	kb   int // base of the current key head
	vb   int // and value head
}

// refKernels is a kernelsOn of the plain loops: they need no engine.
func refKernels[T float32 | float64](_ *gemm.Engine, sh attnShape, k, v attnView[T]) attnKernels[T] {
	return newAttnRef(sh, k, v)
}

// newAttnRef returns the loops over keys k and values v.
func newAttnRef[T float32 | float64](sh attnShape, k, v attnView[T]) attnKernels[T] {
	return &attnRef[T]{k: k, v: v, sh: sh}
}

func (a *attnRef[T]) err() error { return nil }
func (a *attnRef[T]) release()   {}

func (a *attnRef[T]) prepareK(b, g int) { a.kb = a.k.at(b, g) }
func (a *attnRef[T]) prepareV(b, g int) { a.vb = a.v.at(b, g) }

func (a *attnRef[T]) qk(q []T, ldq, m int, s []T) {
	for i := 0; i < m; i++ {
		for j := 0; j < a.sh.t; j++ {
			var acc T
			kr := a.k.data[a.kb+j*a.k.ss:]
			for f := 0; f < a.sh.d; f++ {
				acc += q[i*ldq+f] * kr[f]
			}
			s[i*a.sh.t+j] = acc
		}
	}
}

func (a *attnRef[T]) pv(p []T, m int, y []T, ldy int) {
	for i := 0; i < m; i++ {
		for c := 0; c < a.sh.dv; c++ {
			var acc T
			for j := 0; j < a.sh.t; j++ {
				acc += p[i*a.sh.t+j] * a.v.data[a.vb+j*a.v.ss+c]
			}
			y[i*ldy+c] = acc
		}
	}
}
