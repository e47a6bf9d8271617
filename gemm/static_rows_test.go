package gemm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/quant"
)

// staticByte is the reference of one value quantized with fixed
// parameters, written from the formula in float64 but for the product,
// which the kernels take in float32.
func staticByte(v, inv float32, zp int32) uint8 {
	q := float64(v * inv)
	q = math.Min(math.Max(q, float64(-zp)), float64(quant.ActivationLevels-zp))
	return uint8(int32(math.RoundToEven(q)) + zp)
}

// TestQuantizeRowsWithMatchesDynamic quantizes rows whose own range gives
// the parameters handed in: the bytes, zero points and scales equal
// QuantizeRows's on every table.
func TestQuantizeRowsWithMatchesDynamic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, e := range engines(t) {
		for _, k := range []int{1, 3, 4, 17, 64, 131} {
			a := randomActivations(r, 1, k)
			if k > 2 {
				a[1] = -a[1] - 0.5 // a negative value: a zero point inside
			}
			lo, hi, _ := kernels.MinMax(a)
			s, inv, zp := quant.RowParams(lo, hi)
			var dyn, st QRows
			if err := e.QuantizeRows(&dyn, a, 1, k, k); err != nil {
				t.Fatal(err)
			}
			if err := e.QuantizeRowsWith(&st, a, 1, k, k, s, inv, zp); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dyn.u[:dyn.ldu], st.u[:st.ldu]) || dyn.zp[0] != st.zp[0] || dyn.scale[0] != st.scale[0] {
				t.Fatalf("%s k=%d: static rows differ from the dynamic ones with the same parameters", name(e), k)
			}
		}
	}
}

// TestQuantizeRowsWithClamps quantizes many rows with one set of
// parameters narrower than the rows (values past the range clamp), at a
// row stride and on every table, against the reference formula; the
// products agree on every table.
func TestQuantizeRowsWithClamps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const m, k, lda, n = 70, 1000, 1003, 19 // m·k·quantizeCost past MinParallelWork: split
	x := make([]float32, (m-1)*lda+k)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	s, inv, zp := quant.RowParams(-1.5, 2.5)
	if zp == 0 || zp == quant.ActivationLevels {
		t.Fatalf("zero point %d: the test wants one inside", zp)
	}
	w := make([]float32, k*n)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	qw, err := quant.QuantizeWeights(w, k, n, quant.PerChannel)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := PackQ(qw)
	if err != nil {
		t.Fatal(err)
	}
	var first []float32
	for _, e := range engines(t) {
		var q QRows
		if err := e.QuantizeRowsWith(&q, x, m, k, lda, s, inv, zp); err != nil {
			t.Fatal(err)
		}
		for i := range m {
			if q.zp[i] != zp || q.scale[i] != s {
				t.Fatalf("%s row %d: zero point %d scale %v, want %d %v", name(e), i, q.zp[i], q.scale[i], zp, s)
			}
			for j := range k {
				if got, want := q.u[i*q.ldu+j], staticByte(x[i*lda+j], inv, zp); got != want {
					t.Fatalf("%s row %d col %d: byte %d, want %d (value %v)", name(e), i, j, got, want, x[i*lda+j])
				}
			}
			for j := k; j < q.ldu; j++ {
				if q.u[i*q.ldu+j] != 0 {
					t.Fatalf("%s row %d: padding byte %d is %d", name(e), i, j, q.u[i*q.ldu+j])
				}
			}
		}
		c := make([]float32, m*n)
		if err := e.QMatMulRows(&q, pw, c, n); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = c
			// The product against a float64 reference from the bytes.
			for i := range m {
				for j := range n {
					var acc float64
					for kk := range k {
						acc += float64(int32(q.u[i*q.ldu+kk])-zp) * float64(qw.Q[kk*n+j])
					}
					want := acc * float64(s) * float64(qw.Scales[j])
					if d := math.Abs(float64(c[i*n+j]) - want); d > 1e-4*math.Max(1, math.Abs(want)) {
						t.Fatalf("row %d col %d: %v, want %v", i, j, c[i*n+j], want)
					}
				}
			}
		} else if !slices.Equal(first, c) {
			t.Fatalf("%s: the product differs from the first table's", name(e))
		}
	}
}

// TestQuantizeRowsAs runs the three ways: nil is QuantizeRows, a static
// Activations is QuantizeRowsWith, a measuring one quantizes per row and
// records the range of every row it saw.
func TestQuantizeRowsAs(t *testing.T) {
	e := newEngine(t, dispatch.Default(), 1)
	r := rand.New(rand.NewPCG(7, 8))
	const m, k = 5, 33
	x := randomActivations(r, m, k)
	x[3*k+4] = -7
	x[1*k] = 9
	var want, got QRows
	if err := e.QuantizeRows(&want, x, m, k, k); err != nil {
		t.Fatal(err)
	}
	meas := MeasureActivations()
	if meas.Static() {
		t.Fatal("a measuring Activations says it is static")
	}
	for _, a := range []*Activations{nil, meas} {
		if err := e.QuantizeRowsAs(&got, x, m, k, k, a); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(want.u, got.u) || !slices.Equal(want.zp, got.zp) || !slices.Equal(want.scale, got.scale) {
			t.Fatalf("%v: rows differ from QuantizeRows", a)
		}
	}
	if lo, hi, rows := meas.Range(); lo != -7 || hi != 9 || rows != m {
		t.Fatalf("measured [%v, %v] over %d rows, want [-7, 9] over %d", lo, hi, rows, m)
	}
	st, err := StaticActivations(-2, 3)
	if err != nil {
		t.Fatal(err)
	}
	s, inv, zp := st.Params()
	if ws, winv, wzp := quant.RowParams(-2, 3); s != ws || inv != winv || zp != wzp || !st.Static() {
		t.Fatalf("static parameters %v %v %d, want RowParams's %v %v %d", s, inv, zp, ws, winv, wzp)
	}
	if err := e.QuantizeRowsAs(&got, x, m, k, k, st); err != nil {
		t.Fatal(err)
	}
	for i := range m * k {
		row, j := i/k, i%k
		if b := got.u[row*got.ldu+j]; b != staticByte(x[i], inv, zp) {
			t.Fatalf("value %d: byte %d, want %d", i, b, staticByte(x[i], inv, zp))
		}
	}
	if _, err := StaticActivations(3, -2); err == nil {
		t.Error("StaticActivations(3, -2): no error")
	}
	if _, err := StaticActivations(float32(math.Inf(-1)), 0); err == nil {
		t.Error("StaticActivations(-Inf, 0): no error")
	}
	x[2*k+5] = float32(math.NaN())
	if err := e.QuantizeRowsAs(&got, x, m, k, k, st); !errors.Is(err, ErrNotFinite) {
		t.Errorf("a NaN under static parameters: %v, want ErrNotFinite", err)
	}
	if err := e.QuantizeRowsWith(&got, x, m, k, k, s, inv, 200); err == nil {
		t.Error("zero point 200: no error")
	}
	if err := e.QuantizeRowsWith(&got, x, m, k+1, k, s, inv, zp); err == nil {
		t.Error("a row stride below k: no error")
	}
}

// TestQuantizeRowsAllocations: quantizing rows on one core into a QRows
// that held as many before allocates nothing, per row or static (an
// int8 network's 1×1 layers quantize their rows hundreds of times a
// run; a split across cores allocates what Parallel does), and a
// non-finite row is refused by its index, split or not.
func TestQuantizeRowsAllocations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const m, k = 256, 512 // large enough to split on two threads
	a := randomActivations(r, m, k)
	for _, threads := range []int{1, 2} {
		e := New(dispatch.Default(), threads)
		defer e.Close()
		var q QRows
		for _, c := range []struct {
			name string
			run  func() error
		}{
			{"per row", func() error { return e.QuantizeRows(&q, a, m, k, k) }},
			{"static", func() error { return e.QuantizeRowsWith(&q, a, m, k, k, 0.05, 20, 60) }},
		} {
			if err := c.run(); err != nil {
				t.Fatal(err)
			}
			if threads > 1 || raceEnabled { // the race detector's sync.Pool drops some of what it is given
				continue
			}
			if n := testing.AllocsPerRun(20, func() {
				if err := c.run(); err != nil {
					t.Fatal(err)
				}
			}); n > 0 {
				t.Errorf("%s: %v allocations a call", c.name, n)
			}
		}
		bad := slices.Clone(a)
		bad[200*k+3] = float32(math.NaN())
		if err := e.QuantizeRows(&q, bad, m, k, k); !errors.Is(err, ErrNotFinite) || err.Error() != ErrNotFinite.Error()+" (row 200)" {
			t.Errorf("%d threads: a NaN in row 200: %v", threads, err)
		}
		if err := e.QuantizeRowsWith(&q, bad, m, k, k, 0.05, 20, 60); !errors.Is(err, ErrNotFinite) || err.Error() != ErrNotFinite.Error()+" (row 200)" {
			t.Errorf("%d threads, static: a NaN in row 200: %v", threads, err)
		}
	}
}
