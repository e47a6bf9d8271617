package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// TestQMatMulRowsFinish runs finished products on every table, with and
// without a residual, against the same product finished afterwards by
// kernels.ConvFinish, bit for bit: the finish in a kernel's registers
// (tables that take kernels.QFinish: whole eight-row tiles), after the
// kernel (shorter tiles, other tables, the padded last panel) and after
// the per-block scheme's blocks, on awkward shapes. With a residual, the
// product also runs in place (the residual is the output, each value
// written over its own) to the same bits. It refuses a bias or residual
// too short, and a residual that is the output at another row stride.
func TestQMatMulRowsFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	shapes := [][3]int{{1, 3, 17}, {8, 16, 48}, {9, 131, 47}, {16, 40, 96}, {17, 70, 130}, {40, 96, 200}, touchedShape(t)}
	for _, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		a := randomActivations(r, m, k)
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		const ldc, ldr = 5, 3 // row strides past n
		bias := make([]float32, n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		res := make([]float32, (m-1)*(n+ldr)+n)
		for i := range res {
			res[i] = float32(r.NormFloat64())
		}
		for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerBlock} {
			qw := packedQ(t, wf, k, n, scheme)
			for _, e := range engines(t) {
				var qa QRows
				if err := e.QuantizeRows(&qa, a, m, k, k); err != nil {
					t.Fatal(err)
				}
				for _, fin := range finishCases(bias, res, n+ldr) {
					want := make([]float32, (m-1)*(n+ldc)+n)
					if err := e.QMatMulRows(&qa, qw, want, n+ldc); err != nil {
						t.Fatal(err)
					}
					finishAfterwards(want, m, n, n+ldc, fin)
					got := make([]float32, len(want))
					if err := e.QMatMulRowsFinish(&qa, qw, got, n+ldc, fin); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %v %v residual %v: c[%d] = %v, want %v", name(e), scheme, sh, fin.Res != nil, i, got[i], want[i])
						}
					}
					if fin.Res == nil {
						continue
					}
					over := make([]float32, len(want)) // the residual at the output's row stride
					for i := range m {
						copy(over[i*(n+ldc):][:n], fin.Res[i*fin.LDR:])
					}
					in := *fin
					in.Res, in.LDR = over, n+ldc
					if err := e.QMatMulRowsFinish(&qa, qw, over, n+ldc, &in); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if math.Float32bits(over[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %v %v in place: c[%d] = %v, want %v", name(e), scheme, sh, i, over[i], want[i])
						}
					}
					in.LDR = n + ldr
					if err := e.QMatMulRowsFinish(&qa, qw, over, n+ldc, &in); err == nil {
						t.Errorf("%s: a residual that is the output was taken at row stride %d, the output's %d", name(e), n+ldr, n+ldc)
					}
				}
				short := &Finish{Bias: bias[:n-1]}
				if err := e.QMatMulRowsFinish(&qa, qw, make([]float32, m*n), n, short); err == nil {
					t.Errorf("%s: a bias of %d values for %d columns was taken", name(e), n-1, n)
				}
				short = &Finish{Bias: bias, Res: res[:len(res)-1], LDR: n + ldr}
				if err := e.QMatMulRowsFinish(&qa, qw, make([]float32, m*n), n, short); err == nil {
					t.Errorf("%s: a residual one value short was taken", name(e))
				}
			}
		}
	}
}

// TestMatMulStridedFinish runs finished float products on every table,
// with and without a residual, against the same product finished
// afterwards by kernels.ConvFinish, bit for bit: in the kernel's
// registers (tables whose FFinish says so: whole eight-row tiles), after
// the kernel (shorter tiles, other tables, the padded last panel), over
// several K blocks; and refuses a bias or residual too short, and a
// residual that is the output (its K blocks write partial sums over it).
func TestMatMulStridedFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, sh := range [][3]int{{1, 3, 17}, {1, 90, 300}, {1, 33, 128}, {8, 16, 48}, {9, 131, 47}, {16, 40, 96}, {17, 700, 130}, {40, 96, 200}, touchedShape(t)} {
		m, k, n := sh[0], sh[1], sh[2]
		const lda, ldc, ldr = 2, 5, 3 // row strides past k and n
		a := make([]float32, (m-1)*(k+lda)+k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		b := make([]float32, k*n)
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		fw := PackF(k, n, b, n)
		bias := make([]float32, n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		res := make([]float32, (m-1)*(n+ldr)+n)
		for i := range res {
			res[i] = float32(r.NormFloat64())
		}
		for _, e := range engines(t) {
			for _, fin := range finishCases(bias, res, n+ldr) {
				want := make([]float32, (m-1)*(n+ldc)+n)
				if err := e.MatMulStrided(a, m, k+lda, fw, want, n+ldc); err != nil {
					t.Fatal(err)
				}
				finishAfterwards(want, m, n, n+ldc, fin)
				got := make([]float32, len(want))
				if err := e.MatMulStridedFinish(a, m, k+lda, fw, got, n+ldc, fin); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v residual %v: c[%d] = %v, want %v", name(e), sh, fin.Res != nil, i, got[i], want[i])
					}
				}
				// Memory to draw toward the cache (a next tile's output
				// and residual) changes no value.
				drawn := *fin
				drawn.Draw = [2][]float32{make([]float32, 3*n+r.IntN(4000)), res}
				clear(got)
				if err := e.MatMulStridedFinish(a, m, k+lda, fw, got, n+ldc, &drawn); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v residual %v drawing: c[%d] = %v, want %v", name(e), sh, fin.Res != nil, i, got[i], want[i])
					}
				}
			}
			if err := e.MatMulStridedFinish(a, m, k+lda, fw, make([]float32, m*n), n, &Finish{Bias: bias[:n-1]}); err == nil {
				t.Errorf("%s: a bias of %d values for %d columns was taken", name(e), n-1, n)
			}
			if err := e.MatMulStridedFinish(a, m, k+lda, fw, make([]float32, m*n), n, &Finish{Bias: bias, Res: res[:len(res)-1], LDR: n + ldr}); err == nil {
				t.Errorf("%s: a residual one value short was taken", name(e))
			}
			over := make([]float32, m*n)
			if err := e.MatMulStridedFinish(a, m, k+lda, fw, over, n, &Finish{Bias: bias, Res: over, LDR: n}); err == nil {
				t.Errorf("%s: a float product took its output as its residual", name(e))
			}
		}
	}
}

// touchedShape is a product whose row chunks the engine touches before
// writing them (output and residual, at their own row strides), on every
// table's row tile.
func touchedShape(t *testing.T) [3]int {
	sh := [3]int{400, 40, 800}
	for _, mr := range []int{4, 8, 12, 14} {
		if !touches(sh[0], sh[2], rowChunk(mr, sh[0])) {
			t.Fatalf("a product of %v is not touched", sh)
		}
	}
	return sh
}

// finishCases are the finishes the tests run: Relu's clamp without a
// residual, Relu6's and none with one (rows ldr apart).
func finishCases(bias, res []float32, ldr int) []*Finish {
	inf := float32(math.Inf(1))
	return []*Finish{
		{Bias: bias, Lo: 0, Hi: inf},
		{Bias: bias, Res: res, LDR: ldr, Lo: 0, Hi: 6},
		{Bias: bias, Res: res, LDR: ldr, Lo: -inf, Hi: inf},
	}
}

// finishAfterwards finishes the m rows of n values of c (ldc apart) as
// fin says, row by row on kernels.ConvFinish: what a finished product
// must equal.
func finishAfterwards(c []float32, m, n, ldc int, fin *Finish) {
	for i := range m {
		var rr []float32
		if fin.Res != nil {
			rr = fin.Res[i*fin.LDR:][:n]
		}
		kernels.ConvFinish(c[i*ldc:][:n], fin.Bias, rr, fin.Lo, fin.Hi)
	}
}

// TestOverResidualNotTouched holds an int8 product whose output is its
// residual to not touching it, with per-channel and per-block weights
// (whose finish reads a copy of the residual), where the same product
// into a buffer of its own touches its row chunks.
func TestOverResidualNotTouched(t *testing.T) {
	e := New(Default().Table(), 1)
	defer e.Close()
	sh := touchedShape(t)
	m, k, n := sh[0], sh[1], sh[2]
	r := rand.New(rand.NewPCG(3, 4))
	wf := make([]float32, k*n)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	var q QRows
	if err := e.QuantizeRowsAs(&q, randomActivations(r, m, k), m, k, k, nil); err != nil {
		t.Fatal(err)
	}
	c, res, bias := make([]float32, m*n), make([]float32, m*n), make([]float32, n)
	for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerBlock} {
		qw := packedQ(t, wf, k, n, scheme)
		for _, tc := range []struct {
			name  string
			fin   *Finish
			touch bool
		}{
			{"no residual", &Finish{Bias: bias}, true},
			{"a residual of its own", &Finish{Bias: bias, Res: res, LDR: n}, true},
			{"the output as its residual", &Finish{Bias: bias, Res: c, LDR: n}, false},
		} {
			j := e.newQJob(&q, qw, c, n, tc.fin, q.offsets(e.t.QOffset))
			if j.touch != tc.touch {
				t.Errorf("%s %v: a product of %v with %s touches its output: %v, want %v", e.Table().Name, scheme, sh, tc.name, j.touch, tc.touch)
			}
			j.free()
		}
	}
}
