package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// gridValues returns m×k values on the grid of a pair with dequantize
// scale s and zero point zp (uint8: float32(q − zp)·s for bytes q, the
// ends of the range among them) and the bytes q.
func gridValues(r *rand.Rand, m, k int, s float32, zp int32) ([]float32, []uint8) {
	q := make([]uint8, m*k)
	x := make([]float32, m*k)
	for i := range q {
		switch i % 7 {
		case 0:
			q[i] = 255
		case 1:
			q[i] = 0
		case 2:
			q[i] = uint8(zp)
		default:
			q[i] = uint8(r.IntN(256))
		}
		x[i] = float32(int32(q[i])-zp) * s
	}
	return x, q
}

// TestGridActivations quantizes values on a pair's grid with the pair's
// own parameters, on every table and every way a layer quantizes them
// (rows, an image at once, rows prepared and filled by the caller): the
// bytes are the pair's bytes, every one, through uint8 and through int8
// (the zero point shifted by 128), and the rows say they are wide.
func TestGridActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const m, k = 37, 70
	for _, c := range []struct {
		s  float32
		zp int32
	}{{0.0173, 0}, {0.05, 131}, {3.1e-4, 255}, {1.7, 128}} {
		x, want := gridValues(r, m, k, c.s, c.zp)
		a, err := GridActivations(c.s, c.zp)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Static() || !a.Grid() {
			t.Fatalf("grid %v: static %v, grid %v", c, a.Static(), a.Grid())
		}
		for _, e := range engines(t) {
			var qa QRows
			if err := e.QuantizeRowsAs(&qa, x, m, k, k, a); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				if got := qa.u[i*qa.ldu : i*qa.ldu+k]; !slices.Equal(got, want[i*k:(i+1)*k]) {
					t.Fatalf("%s grid %v: row %d quantized to %v, want %v", name(e), c, i, got, want[i*k:(i+1)*k])
				}
				if qa.zp[i] != c.zp || qa.scale[i] != c.s {
					t.Fatalf("%s grid %v: row %d has zero point %d and scale %v", name(e), c, i, qa.zp[i], qa.scale[i])
				}
			}
			if !qa.Wide() {
				t.Errorf("%s grid %v: rows not wide", name(e), c)
			}
			img := make([]uint8, len(x))
			if err := e.QuantizeStatic(img, x, a); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(img, want) {
				t.Fatalf("%s grid %v: QuantizeStatic differs from the pair's bytes", name(e), c)
			}
			var filled QRows
			if _, _, err := filled.PrepareRows(m, k); err != nil {
				t.Fatal(err)
			}
			if err := filled.SetStatic(a); err != nil || !filled.Wide() {
				t.Errorf("%s grid %v: SetStatic: %v, wide %v", name(e), c, err, filled.Wide())
			}
		}
	}
	// Through int8: q in [-128, 127], the bytes q + 128.
	s, dz := float32(0.021), int32(-5)
	x := make([]float32, 256)
	want := make([]uint8, 256)
	for i := range x {
		q := int32(i) - 128
		x[i] = float32(q-dz) * s
		want[i] = uint8(q + 128)
	}
	a, err := GridActivations(s, dz+128)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range dispatch.Available() {
		got := make([]uint8, len(x))
		a.Quantize(tb, x, got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: an int8 pair's grid quantized to %v, want %v", tb.Name, got, want)
		}
	}
	for _, bad := range []struct {
		s  float32
		zp int32
	}{{0, 0}, {-1, 0}, {float32(math.NaN()), 0}, {float32(math.Inf(1)), 0}, {1, -1}, {1, 256}, {3e38, 0}, {3e38, 255}} {
		if _, err := GridActivations(bad.s, bad.zp); err == nil {
			t.Errorf("GridActivations(%v, %d) accepted", bad.s, bad.zp)
		}
	}
}

// TestGridProducts multiplies rows of a pair's bytes (up to 255) by
// per-channel weights on every table, finished with a bias: every table
// gives the same bits (a table whose kernel is exact only up to 128 runs
// each row as two), and they are the exact integer product scaled,
// within float32 rounding; through the product's own loop and the loop
// that quantizes a chunk of rows and multiplies it at once.
func TestGridProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, sh := range [][3]int{{1, 4, 16}, {9, 131, 47}, {40, 300, 96}, {200, 576, 64}} {
		m, k, n := sh[0], sh[1], sh[2]
		const s, zp = float32(0.0371), int32(3)
		x, q := gridValues(r, m, k, s, zp)
		a, err := GridActivations(s, zp)
		if err != nil {
			t.Fatal(err)
		}
		qw := randomPackedQ(t, r, k, n)
		bias := make([]float32, n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		fin := &Finish{Bias: bias, Lo: float32(math.Inf(-1)), Hi: float32(math.Inf(1))}
		exact := exactGridProduct(t, q, m, k, zp, qw)
		var first []float32
		for _, e := range engines(t) {
			var qa QRows
			if err := e.QuantizeRowsAs(&qa, x, m, k, k, a); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, m*n)
			if err := e.QMatMulRowsFinish(&qa, qw, got, n, fin); err != nil {
				t.Fatalf("%s %v: %v", name(e), sh, err)
			}
			chunked := make([]float32, m*n)
			if err := e.QMatMulAsFinish(x, m, qw, chunked, a, fin); err != nil {
				t.Fatalf("%s %v: %v", name(e), sh, err)
			}
			if first == nil {
				first = got
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						want := float64(exact[i*n+j])*float64(s)*float64(qw.scales[j]) + float64(bias[j])
						if d := math.Abs(float64(got[i*n+j]) - want); d > 1e-5*(math.Abs(want)+1) {
							t.Fatalf("%s %v: c[%d][%d] = %v, the exact product %v", name(e), sh, i, j, got[i*n+j], want)
						}
					}
				}
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) || math.Float32bits(chunked[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%s %v: c[%d] = %v (chunked %v), the first table's %v", name(e), sh, i, got[i], chunked[i], first[i])
				}
			}
		}
	}
}

// exactGridProduct returns Σ_k (q[i][k] − zp)·W[k][j] in int64 for w's
// integers, through QMatMulInt32 of the bytes and the weights' column
// sums on the reference table.
func exactGridProduct(t *testing.T, q []uint8, m, k int, zp int32, w *QWeights) []int64 {
	e := newEngine(t, dispatch.Reference(), 1)
	var rows QRows
	if err := rows.LoadU8(q, m, k, k); err != nil {
		t.Fatal(err)
	}
	n := w.N
	sums := make([]int32, m*n)
	if err := e.QMatMulInt32(&rows, w, sums, n); err != nil {
		t.Fatal(err)
	}
	out := make([]int64, m*n)
	cs := w.ColSums()
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			out[i*n+j] = int64(sums[i*n+j]) - int64(zp)*int64(cs[j])
		}
	}
	return out
}
