package gemm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// engines returns, for every table this CPU runs, engines with one and two
// workers, and one with K blocks small enough that every product of a few
// dozen k is split along K. They are closed when t ends.
func engines(t testing.TB) []*Engine {
	var out []*Engine
	for _, tb := range dispatch.Available() {
		small := New(tb, 2)
		small.kcBytes = 1 // one group of 4 k (one k for floats) per K block
		out = append(out, New(tb, 1), New(tb, 2), small)
	}
	for _, e := range out {
		t.Cleanup(e.Close)
	}
	return out
}

// newEngine returns New(tb, threads), closed when t ends.
func newEngine(t testing.TB, tb *dispatch.Table, threads int) *Engine {
	e := New(tb, threads)
	t.Cleanup(e.Close)
	return e
}

func name(e *Engine) string {
	s := e.t.Name + "/" + string(rune('0'+e.Threads()))
	if e.kcBytes < 1024 {
		s += "/kblocked"
	}
	return s
}

// randomPackedQ returns k×n weights of N(0, 1) values, quantized per
// channel and packed.
func randomPackedQ(t testing.TB, r *rand.Rand, k, n int) *QWeights {
	wf := make([]float32, k*n)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	return packedQ(t, wf, k, n, quant.PerChannel)
}

// packedQ returns the k×n weights wf quantized in scheme and packed.
func packedQ(t testing.TB, wf []float32, k, n int, scheme quant.Scheme) *QWeights {
	w, err := quant.QuantizeWeights(wf, k, n, scheme)
	if err != nil {
		t.Fatal(err)
	}
	qw, err := PackQ(w)
	if err != nil {
		t.Fatal(err)
	}
	return qw
}

func randomActivations(r *rand.Rand, m, k int) []float32 {
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	for row := 0; row < m; row += 2 { // even rows non-negative: zero point 0
		for j := 0; j < k; j++ {
			a[row*k+j] = float32(math.Abs(float64(a[row*k+j])))
		}
	}
	return a
}

// TestQMatMulMatchesReference runs whole products on every table against
// kernels.QGemmRef / QGemmBlockRef on the same quantized activations,
// bit for bit, for every weight scheme and awkward shapes.
func TestQMatMulMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	shapes := [][3]int{{1, 1, 1}, {1, 3, 17}, {4, 16, 32}, {5, 33, 31}, {7, 64, 100}, {9, 131, 47}, {3, 40, 257}, {17, 70, 130}, {40, 96, 200}, {130, 20, 60}}
	ref := newEngine(t, dispatch.Available()[len(dispatch.Available())-1], 1)
	for _, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		a := randomActivations(r, m, k)
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		var qa QRows
		if err := ref.QuantizeRows(&qa, a, m, k, k); err != nil {
			t.Fatal(err)
		}
		for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerTensor, quant.PerBlock} {
			w, err := quant.QuantizeWeights(wf, k, n, scheme)
			if err != nil {
				t.Fatal(err)
			}
			qw, err := PackQ(w)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, m*n)
			if scheme == quant.PerBlock {
				kernels.QGemmBlockRef(m, n, k, qa.u, qa.ldu, qa.zp, qa.scale, w.Q, w.Scales, want, n)
			} else {
				kernels.QGemmRef(m, n, k, qa.u, qa.ldu, qa.zp, qa.scale, w.Q, w.ChannelScales(), want, n)
			}
			for _, e := range engines(t) {
				got := make([]float32, m*n)
				if err := e.QMatMul(a, m, qw, got); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v %v: c[%d] = %v, want %v", name(e), scheme, sh, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestMatMulMatchesReference runs float products on every table against
// FBlockRef (fused multiply-adds in k order), bit for bit, and against
// kernels.Sgemm (the plain definition) within rounding.
func TestMatMulMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	// One row runs on the tables' row kernels: {1, 70, 300} in three
	// units of up to rowPanels panels, its last padded.
	for _, sh := range [][3]int{{1, 1, 1}, {1, 70, 300}, {1, 9, 32}, {6, 5, 16}, {7, 33, 17}, {13, 64, 40}, {2, 0, 3}, {9, 100, 50}, {100, 17, 49}} {
		m, k, n := sh[0], sh[1], sh[2]
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		def := make([]float32, m*n)
		kernels.Sgemm(m, n, k, a, k, b, n, def, n)
		fw := PackF(k, n, b, n)
		var want []float32
		for _, e := range engines(t) {
			got := make([]float32, m*n)
			if err := e.MatMul(a, m, fw, got); err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = got
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %v: c[%d] = %v, another table gave %v", name(e), sh, i, got[i], want[i])
				}
				if d := math.Abs(float64(got[i] - def[i])); d > 1e-5*float64(k+1) {
					t.Fatalf("%s %v: c[%d] = %v, definition %v", name(e), sh, i, got[i], def[i])
				}
			}
		}
	}
}

// TestEmptyProducts: no rows, no columns or K = 0 return without a panic:
// nothing to write, or zeros.
func TestEmptyProducts(t *testing.T) {
	for _, e := range engines(t) {
		for _, sh := range [][3]int{{0, 5, 7}, {3, 0, 7}, {3, 5, 0}, {0, 0, 0}, {40, 0, 33}} {
			m, k, n := sh[0], sh[1], sh[2]
			a := make([]float32, m*k)
			for i := range a {
				a[i] = 1
			}
			for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerBlock} {
				w, err := quant.QuantizeWeights(make([]float32, k*n), k, n, scheme)
				if err != nil {
					t.Fatal(err)
				}
				qw, err := PackQ(w)
				if err != nil {
					t.Fatal(err)
				}
				c := make([]float32, m*n)
				for i := range c {
					c[i] = 42
				}
				if err := e.QMatMul(a, m, qw, c); err != nil {
					t.Fatalf("%s %v %v: %v", name(e), scheme, sh, err)
				}
				for i, v := range c {
					if v != 0 {
						t.Fatalf("%s %v %v: c[%d] = %v, want 0", name(e), scheme, sh, i, v)
					}
				}
			}
			c := make([]float32, m*n)
			for i := range c {
				c[i] = 42
			}
			if err := e.MatMul(a, m, PackF(k, n, make([]float32, k*n), n), c); err != nil {
				t.Fatalf("%s %v: %v", name(e), sh, err)
			}
			for i, v := range c {
				if v != 0 {
					t.Fatalf("%s %v: float c[%d] = %v, want 0", name(e), sh, i, v)
				}
			}
		}
	}
}

// TestStridedRows quantizes rows the caller laid out with a row stride and
// writes them into a strided output, as an implicit-GEMM convolution does,

// TestMatMulSegments: a product whose rows are read in segments where
// they lie (rows overlapping, as a convolution reads its channels-last
// image) equals MatMul on the rows gathered, bit for bit, on every engine
// (one and two workers, K blocks of one column), for segments shorter and
// longer than a K block, with nothing of c written past the product; bad
// segments are errors.
func TestMatMulSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, sh := range []struct{ m, nseg, seg, lda, n int }{
		{1, 1, 5, 0, 16}, {9, 3, 12, 4, 45}, {40, 7, 21, 6, 64}, {70, 3, 192, 64, 64},
		{17, 2, 700, 3, 33}, {100, 9, 64, 64, 130}, {8, 4, 1, 1, 16},
	} {
		k := sh.nseg * sh.seg
		a := randomActivations(r, 1, (sh.m-1)*sh.lda+sh.seg+3*sh.seg+50)
		segs := make([]int, sh.nseg)
		for i := range segs {
			segs[i] = r.IntN(len(a) - (sh.m-1)*sh.lda - sh.seg + 1)
		}
		dense := make([]float32, sh.m*k)
		for i := 0; i < sh.m; i++ {
			for s, off := range segs {
				copy(dense[i*k+s*sh.seg:], a[off+i*sh.lda:off+i*sh.lda+sh.seg])
			}
		}
		wf := make([]float32, k*sh.n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		fw := PackF(k, sh.n, wf, sh.n)
		ldc := sh.n + 3
		for _, e := range engines(t) {
			want := make([]float32, sh.m*sh.n)
			if err := e.MatMul(dense, sh.m, fw, want); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, sh.m*ldc)
			for i := range out {
				out[i] = -7
			}
			if err := e.MatMulSegments(a, sh.m, sh.lda, segs, fw, out, ldc); err != nil {
				t.Fatal(err)
			}
			for i, v := range out {
				row, col := i/ldc, i%ldc
				if col >= sh.n {
					if v != -7 {
						t.Fatalf("%s %+v: out[%d] outside the product overwritten", name(e), sh, i)
					}
					continue
				}
				if math.Float32bits(v) != math.Float32bits(want[row*sh.n+col]) {
					t.Fatalf("%s %+v: [%d][%d] = %v, gathered %v", name(e), sh, row, col, v, want[row*sh.n+col])
				}
			}
		}
	}
	e := newEngine(t, dispatch.Default(), 1)
	fw := PackF(6, 16, make([]float32, 96), 16)
	c := make([]float32, 32)
	for _, bad := range []struct {
		a    []float32
		segs []int
	}{
		{make([]float32, 10), []int{0, 0, 0, 0}}, // 4 segments do not divide K = 6
		{make([]float32, 10), []int{0, 8}},       // past the end
		{make([]float32, 10), []int{-1, 0}},      // before the start
		{make([]float32, 10), nil},               // no segments
	} {
		if err := e.MatMulSegments(bad.a, 2, 1, bad.segs, fw, c, 16); err == nil {
			t.Errorf("segments %v of %d values: no error", bad.segs, len(bad.a))
		}
	}
}

// and compares with the dense product.
func TestStridedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	m, k, n, lda, ldc := 11, 37, 45, 50, 60
	dense := randomActivations(r, m, k)
	a := make([]float32, m*lda)
	for i := 0; i < m; i++ {
		copy(a[i*lda:], dense[i*k:(i+1)*k])
		a[i*lda+k] = float32(math.NaN()) // past k: never read
	}
	wf := make([]float32, k*n)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	w, _ := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
	qw, _ := PackQ(w)
	for _, e := range engines(t) {
		want := make([]float32, m*n)
		if err := e.QMatMul(dense, m, qw, want); err != nil {
			t.Fatal(err)
		}
		var rows QRows
		if err := e.QuantizeRows(&rows, a, m, k, lda); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 3+m*ldc)
		for i := range out {
			out[i] = -7
		}
		if err := e.QMatMulRows(&rows, qw, out[3:], ldc); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			row, col := (i-3)/ldc, (i-3)%ldc
			if i < 3 || col >= n {
				if out[i] != -7 {
					t.Fatalf("%s: out[%d] outside the product overwritten", name(e), i)
				}
				continue
			}
			if math.Float32bits(out[i]) != math.Float32bits(want[row*n+col]) {
				t.Fatalf("%s: [%d][%d] = %v, want %v", name(e), row, col, out[i], want[row*n+col])
			}
		}
		fw := PackF(k, n, wf, n)
		fwant := make([]float32, m*n)
		if err := e.MatMul(dense, m, fw, fwant); err != nil {
			t.Fatal(err)
		}
		if err := e.MatMulStrided(a, m, lda, fw, out[3:], ldc); err != nil {
			t.Fatal(err)
		}
		for row := 0; row < m; row++ {
			for col := 0; col < n; col++ {
				if got := out[3+row*ldc+col]; math.Float32bits(got) != math.Float32bits(fwant[row*n+col]) {
					t.Fatalf("%s float: [%d][%d] = %v, want %v", name(e), row, col, got, fwant[row*n+col])
				}
			}
		}
	}
}

func TestQMatMulRefusesNonFinite(t *testing.T) {
	w, _ := quant.QuantizeWeights([]float32{1, 2}, 2, 1, quant.PerChannel)
	qw, _ := PackQ(w)
	for _, e := range engines(t) {
		err := e.QMatMul([]float32{1, float32(math.NaN())}, 1, qw, make([]float32, 1))
		if !errors.Is(err, ErrNotFinite) {
			t.Errorf("%s: NaN activations gave %v", name(e), err)
		}
		big := make([]float32, 300*300)
		big[299*300+5] = float32(math.Inf(1))
		w2, _ := quant.QuantizeWeights(make([]float32, 300), 300, 1, quant.PerChannel)
		qw2, _ := PackQ(w2)
		err = e.QMatMul(big, 300, qw2, make([]float32, 300))
		if !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), "row 299") {
			t.Errorf("%s: Inf in row 299 gave %v", name(e), err)
		}
	}
}

func TestShapeErrors(t *testing.T) {
	e := newEngine(t, dispatch.Default(), 1)
	w, _ := quant.QuantizeWeights(make([]float32, 6), 2, 3, quant.PerChannel)
	qw, _ := PackQ(w)
	if err := e.QMatMul(make([]float32, 3), 2, qw, make([]float32, 6)); err == nil {
		t.Error("short activations accepted")
	}
	var rows QRows
	if err := e.QuantizeRows(&rows, make([]float32, 4), 2, 2, 2); err != nil {
		t.Fatal(err)
	}
	if err := e.QMatMulRows(&rows, qw, make([]float32, 5), 3); err == nil {
		t.Error("short output accepted")
	}
	if err := e.MatMul(make([]float32, 4), 2, PackF(2, 3, make([]float32, 6), 3), make([]float32, 5)); err == nil {
		t.Error("short float output accepted")
	}
}

// TestPanicsBecomeErrors runs a table whose block kernel panics (a broken
// invariant) on one core and across the pool: the product returns a
// *PanicError and the process lives on.
func TestPanicsBecomeErrors(t *testing.T) {
	boom := *dispatch.Default()
	boom.QBlock = func(*kernels.QBlock) { panic("kernel invariant broken") }
	boom.FBlock = func(*kernels.FBlock) { panic("float kernel invariant broken") }
	for _, threads := range []int{1, 2} {
		e := newEngine(t, &boom, threads)
		m, k, n := 256, 64, 256 // large enough to split across workers
		w, _ := quant.QuantizeWeights(make([]float32, k*n), k, n, quant.PerChannel)
		qw, _ := PackQ(w)
		err := e.QMatMul(make([]float32, m*k), m, qw, make([]float32, m*n))
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "kernel invariant broken") {
			t.Errorf("threads=%d: QMatMul gave %v, want a PanicError", threads, err)
		}
		err = e.MatMul(make([]float32, m*k), m, PackF(k, n, make([]float32, k*n), n), make([]float32, m*n))
		if !errors.As(err, &pe) {
			t.Errorf("threads=%d: MatMul gave %v, want a PanicError", threads, err)
		}
		// the pool still works after its workers recovered
		if err := newEngine(t, dispatch.Default(), threads).QMatMul(make([]float32, m*k), m, qw, make([]float32, m*n)); err != nil {
			t.Errorf("threads=%d: after a panic: %v", threads, err)
		}
	}
	p := NewPool(2)
	defer p.Close()
	ran := make([]bool, 3)
	err := p.Run([]func(){func() { ran[0] = true }, func() { panic(errors.New("task")) }, func() { ran[2] = true }})
	if err == nil || !ran[0] || !ran[2] {
		t.Errorf("Pool.Run = %v, ran %v: want the panic as an error and the other tasks run", err, ran)
	}
}

// TestQMatMulInt32 runs integer products (the int32 sums of MatMulInteger)
// on every table against a plain int32 loop: bytes in [0, 255] (u8) and
// [-128, 127] (s8, loaded as a+128), weights anywhere in [-255, 255] (uint8
// or int8 values less a zero point), sums that wrap past int32.
func TestQMatMulInt32(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 17}, {9, 33, 40}, {20, 70, 33}, {130, 9, 50}, {1, 40000, 16}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, signed := range []bool{false, true} {
			a8 := make([]uint8, m*k)
			for i := range a8 {
				a8[i] = []uint8{0, 255, 128, 129, uint8(r.IntN(256))}[r.IntN(5)]
			}
			q := make([]int32, k*n)
			for i := range q {
				q[i] = []int32{-255, 255, -128, 127, int32(r.IntN(511) - 255), int32(r.IntN(255) - 127)}[r.IntN(6)]
				if k == 40000 {
					q[i] = 255
				}
			}
			if k == 40000 {
				for i := range a8 {
					a8[i] = 255
				}
			}
			w, err := PackQInt(k, n, q, quant.PerTensor, []float32{1})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int32, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var s int32
					for p := 0; p < k; p++ {
						av := int32(a8[i*k+p])
						if signed {
							av = int32(int8(a8[i*k+p])) + 128
						}
						s += av * q[p*n+j]
					}
					want[i*n+j] = s
				}
			}
			var rows QRows
			if signed {
				s8 := make([]int8, len(a8))
				for i, v := range a8 {
					s8[i] = int8(v)
				}
				err = rows.LoadS8(s8, m, k, k)
			} else {
				err = rows.LoadU8(a8, m, k, k)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range engines(t) {
				const ldo = 3
				out := make([]int32, m*(n+ldo))
				for i := range out {
					out[i] = -9
				}
				if err := e.QMatMulInt32(&rows, w, out, n+ldo); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n+ldo; j++ {
						got := out[i*(n+ldo)+j]
						if j >= n {
							if got != -9 {
								t.Fatalf("%s %v: out[%d][%d] past N overwritten", name(e), sh, i, j)
							}
							continue
						}
						if got != want[i*n+j] {
							t.Fatalf("%s %v signed=%v: [%d][%d] = %d, want %d", name(e), sh, signed, i, j, got, want[i*n+j])
						}
					}
				}
			}
		}
	}
}

// TestWideWeights runs float products against weights wider than int8
// (uint8 or int8 values less a zero point, as QDQ models store them):
// every table gives the bits of the per-channel definition on the whole
// integer values.
func TestWideWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	m, k, n := 13, 45, 37
	a := randomActivations(r, m, k)
	q := make([]int32, k*n)
	for i := range q {
		q[i] = int32(r.IntN(511) - 255)
	}
	sb := make([]float32, n)
	for j := range sb {
		sb[j] = float32(r.ExpFloat64() / 100)
	}
	w, err := PackQInt(k, n, q, quant.PerChannel, sb)
	if err != nil {
		t.Fatal(err)
	}
	var qa QRows
	if err := newEngine(t, dispatch.Available()[len(dispatch.Available())-1], 1).QuantizeRows(&qa, a, m, k, k); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc int32
			for p := 0; p < k; p++ {
				acc += (int32(qa.u[i*qa.ldu+p]) - qa.zp[i]) * q[p*n+j]
			}
			want[i*n+j] = float32(acc) * qa.scale[i] * sb[j]
		}
	}
	for _, e := range engines(t) {
		got := make([]float32, m*n)
		if err := e.QMatMul(a, m, w, got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: c[%d] = %v, want %v", name(e), i, got[i], want[i])
			}
		}
	}
}

// TestRepack: RepackF and every table's RepackFT pack what PackF does (of
// b and of btᵀ: panels whole, of eight columns and more, of fewer), and
// reuse the weights' memory when it is large enough.
func TestRepack(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, e := range engines(t) {
		for _, kn := range [][2]int{{19, 40}, {64, 45}, {7, 5}, {1, 16}, {33, 128}} {
			k, n := kn[0], kn[1]
			b := make([]float32, k*n)
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			bt := make([]float32, n*k)
			for kk := 0; kk < k; kk++ {
				for j := 0; j < n; j++ {
					bt[j*k+kk] = b[kk*n+j]
				}
			}
			want := PackF(k, n, b, n).packed
			big := PackF(k+5, n, make([]float32, (k+5)*n), n)
			for _, w := range []*FWeights{RepackF(nil, k, n, b, n), e.RepackFT(nil, k, n, bt, k), RepackF(big, k, n, b, n), e.RepackFT(big, k, n, bt, k)} {
				if w.K != k || w.N != n || !slices.Equal(w.packed, want) {
					t.Fatalf("%v: %dx%d repacked differs from PackF's", e.Table(), k, n)
				}
			}
			if e.RepackFT(big, k, n, bt, k) != big {
				t.Errorf("%v: RepackFT did not reuse weights large enough", e.Table())
			}
		}
	}
}

// TestAheadParts checks the shares of a block's weights the tiles of a
// float product draw ahead (aheadBlock.part): each lies within one of the
// block's panels, inside its K columns, in order, the first at the
// block's start.
func TestAheadParts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		k := 1 + r.IntN(300)
		pstr := k*kernels.PanelN + kernels.PanelN*r.IntN(2)
		b := aheadBlock{p0: r.IntN(4), np: 1 + r.IntN(3)}
		b.k0 = r.IntN(k)
		b.k1 = b.k0 + 1 + r.IntN(k-b.k0)
		packed := make([]float32, (b.p0+b.np)*pstr)
		parts := 1 + r.IntN(12)
		last := -1
		for i := range parts {
			p := b.part(packed, pstr, i, parts)
			if len(p) == 0 {
				continue // a share smaller than one value
			}
			at := int(uintptr(unsafe.Pointer(&p[0]))-uintptr(unsafe.Pointer(&packed[0]))) / 4
			q := at/pstr - b.p0
			lo, hi := (b.p0+q)*pstr+b.k0*kernels.PanelN, (b.p0+q)*pstr+b.k1*kernels.PanelN
			if q < 0 || q >= b.np || at < lo || at+len(p) > hi {
				t.Fatalf("block %+v pstr %d: share %d of %d at %d+%d, outside panel %d's [%d, %d)", b, pstr, i, parts, at, len(p), q, lo, hi)
			}
			if at <= last || i == 0 && at != b.p0*pstr+b.k0*kernels.PanelN {
				t.Fatalf("block %+v pstr %d: share %d of %d starts at %d (the last at %d)", b, pstr, i, parts, at, last)
			}
			last = at
		}
	}
}

// TestDrawParts checks the tiles' shares of what a product draws
// (Finish.Draw): each within one region, in order, none overlapping,
// and, in two parts or more, every value of both regions in one.
func TestDrawParts(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	mem := make([]float32, 10000)
	for range 500 {
		l0, l1 := r.IntN(3000), r.IntN(3000)
		if r.IntN(4) == 0 {
			l0 = 0
		}
		regions := [2][]float32{mem[:l0], mem[5000 : 5000+l1]}
		parts := 1 + r.IntN(200)
		next := 0 // the least index of the regions taken one after the other the next share may start at
		covered := 0
		for i := range parts {
			p := drawPart(regions, i, parts)
			if len(p) == 0 {
				continue
			}
			at := int(uintptr(unsafe.Pointer(&p[0]))-uintptr(unsafe.Pointer(&mem[0]))) / 4
			idx := at // its index in the regions taken one after the other
			switch {
			case at+len(p) <= l0:
			case at >= 5000 && at+len(p) <= 5000+l1:
				idx = l0 + at - 5000
			default:
				t.Fatalf("regions %d, %d: share %d of %d at %d+%d crosses or leaves them", l0, l1, i, parts, at, len(p))
			}
			if idx < next {
				t.Fatalf("regions %d, %d: share %d of %d at %d overlaps the last (which ended at %d)", l0, l1, i, parts, idx, next)
			}
			next = idx + len(p)
			covered += len(p)
		}
		if parts > 1 && covered != l0+l1 {
			t.Fatalf("regions %d, %d in %d parts: shares of %d values", l0, l1, parts, covered)
		}
	}
}
