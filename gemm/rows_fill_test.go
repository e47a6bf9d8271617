package gemm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/quant"
)

// fillRows are rows of awkward values for the row-filling entry points:
// non-negative rows (zero point 0), mixed signs, all zeros, -0 beside +0,
// one repeated value, a range too narrow to quantize, and a row past which
// the buffer holds more values.
func fillRows(r *rand.Rand, m, k int) []float32 {
	x := randomActivations(r, m, k)
	for i := 0; i < m; i++ {
		row := x[i*k : (i+1)*k]
		switch i % 7 {
		case 2:
			clear(row)
		case 3:
			for j := range row {
				row[j] = float32(math.Copysign(0, float64(j%2*2-1)))
			}
			if k > 2 {
				row[k/2] = -1.5
			}
		case 4:
			for j := range row {
				row[j] = 3.25
			}
		case 5:
			for j := range row {
				row[j] = float32(j) * 1e-12
			}
		case 6:
			for j := range row {
				row[j] *= 1e4
			}
		}
	}
	return x
}

// cuts splits k values into random segments, as a convolution's row
// gathers them tap by tap.
func cuts(r *rand.Rand, k int) []int {
	c := []int{0}
	for c[len(c)-1] < k {
		c = append(c, min(k, c[len(c)-1]+1+r.IntN(40)))
	}
	return c
}

// TestPrepareRowsMatchesQuantizeRows fills rows as a convolution does,
// each row's range combined from the ranges of random segments and its
// segments quantized one by one on the table's QuantizeU8: the bytes
// (with the zero padding past k), zero points, scales and products equal
// QuantizeRows's on every table.
func TestPrepareRowsMatchesQuantizeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n = 21
	for _, k := range []int{1, 2, 3, 5, 17, 64, 131, 576} {
		for _, m := range []int{0, 1, 3, 7, 16} {
			x := fillRows(r, m, k)
			wf := make([]float32, k*n)
			for i := range wf {
				wf[i] = float32(r.NormFloat64())
			}
			w, _ := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
			qw, _ := PackQ(w)
			for _, e := range engines(t) {
				tb := e.Table()
				var want, got QRows
				if err := e.QuantizeRows(&want, x, m, k, k); err != nil {
					t.Fatal(err)
				}
				got.u = slices.Repeat([]uint8{0xEE}, 4*m*k+64) // stale bytes
				u, ldu, err := got.PrepareRows(m, k)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < m; i++ {
					row := x[i*k : (i+1)*k]
					cut := cuts(r, k)
					var lo, hi float32 // zeros: as a padded tap gives
					for j := 1; j < len(cut); j++ {
						l, h, ok := tb.MinMax(row[cut[j-1]:cut[j]])
						if !ok {
							t.Fatal("finite row reported not finite")
						}
						lo, hi = min(lo, l), max(hi, h)
					}
					inv, zp := got.SetRowRange(i, lo, hi)
					for j := 1; j < len(cut); j++ {
						tb.QuantizeU8(row[cut[j-1]:cut[j]], inv, zp, u[i*ldu+cut[j-1]:i*ldu+cut[j]])
					}
				}
				if !slices.Equal(want.u[:m*want.ldu], got.u[:m*got.ldu]) || !slices.Equal(want.zp, got.zp) || !slices.Equal(want.scale, got.scale) {
					t.Fatalf("%s m=%d k=%d: rows filled in place differ from QuantizeRows's", name(e), m, k)
				}
				a, b := make([]float32, m*n), make([]float32, m*n)
				if err := e.QMatMulRows(&want, qw, a, n); err != nil {
					t.Fatal(err)
				}
				if err := e.QMatMulRows(&got, qw, b, n); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a, b) {
					t.Fatalf("%s m=%d k=%d: products differ", name(e), m, k)
				}
			}
		}
	}
}

// TestQuantizeStaticMatchesRowsWith quantizes a whole buffer once with
// static parameters and copies its rows (in random segments, as a
// convolution gathers them) into rows PrepareRows readied: bytes, zero
// points, scales and products equal QuantizeRowsAs's on every table,
// values past the calibrated range clamping alike; NaN and ±Inf are
// ErrNotFinite.
func TestQuantizeStaticMatchesRowsWith(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const n = 19
	for _, rng := range [][2]float32{{0, 2}, {-1, 1.5}, {-3, -1}, {0, 0}} {
		a, err := StaticActivations(rng[0], rng[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 3, 17, 131, 576} {
			const m = 9
			x := fillRows(r, m, k)
			x = append(x, make([]float32, quantizeChunk+5)...) // past one chunk
			for i := m * k; i < len(x); i++ {
				x[i] = float32(r.NormFloat64())
			}
			wf := make([]float32, k*n)
			for i := range wf {
				wf[i] = float32(r.NormFloat64())
			}
			w, _ := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
			qw, _ := PackQ(w)
			for _, e := range engines(t) {
				xq := make([]uint8, len(x))
				if err := e.QuantizeStatic(xq, x, a); err != nil {
					t.Fatal(err)
				}
				_, inv, zp := a.Params()
				for i, v := range x {
					if xq[i] != staticByte(v, inv, zp) {
						t.Fatalf("%s: value %v quantized to %d, want %d", name(e), v, xq[i], staticByte(v, inv, zp))
					}
				}
				var want, got QRows
				if err := e.QuantizeRowsAs(&want, x, m, k, k, a); err != nil {
					t.Fatal(err)
				}
				u, ldu, err := got.PrepareRows(m, k)
				if err != nil {
					t.Fatal(err)
				}
				if err := got.SetStatic(a); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < m; i++ {
					cut := cuts(r, k)
					for j := 1; j < len(cut); j++ {
						copy(u[i*ldu+cut[j-1]:i*ldu+cut[j]], xq[i*k+cut[j-1]:i*k+cut[j]])
					}
				}
				if !slices.Equal(want.u[:m*want.ldu], got.u[:m*got.ldu]) || !slices.Equal(want.zp, got.zp) || !slices.Equal(want.scale, got.scale) {
					t.Fatalf("%s k=%d %v: statically quantized rows differ from QuantizeRowsAs's", name(e), k, rng)
				}
				c1, c2 := make([]float32, m*n), make([]float32, m*n)
				if err := e.QMatMulRows(&want, qw, c1, n); err != nil {
					t.Fatal(err)
				}
				if err := e.QMatMulRows(&got, qw, c2, n); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(c1, c2) {
					t.Fatalf("%s k=%d %v: products differ", name(e), k, rng)
				}
				var zero [1]uint8
				if err := e.QuantizeStatic(zero[:], []float32{0}, a); err != nil || int32(zero[0]) != zp {
					t.Fatalf("%s: 0 quantized to %d (%v), want the zero point %d", name(e), zero[0], err, zp)
				}
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					y := slices.Clone(x)
					y[len(y)-3] = bad
					if err := e.QuantizeStatic(xq, y, a); !errors.Is(err, ErrNotFinite) {
						t.Fatalf("%s: %v quantized with error %v, want ErrNotFinite", name(e), bad, err)
					}
				}
			}
		}
	}
	var rows QRows
	if _, _, err := rows.PrepareRows(-1, 3); err == nil {
		t.Fatal("PrepareRows(-1, 3) succeeded")
	}
	if err := rows.SetStatic(nil); err == nil {
		t.Fatal("SetStatic(nil) succeeded")
	}
	if err := Default().QuantizeStatic(make([]uint8, 1), make([]float32, 1), MeasureActivations()); err == nil {
		t.Fatal("QuantizeStatic with measuring activations succeeded")
	}
	a, _ := StaticActivations(-1, 1)
	if err := Default().QuantizeStatic(make([]uint8, 1), make([]float32, 2), a); err == nil {
		t.Fatal("QuantizeStatic into a short buffer succeeded")
	}
}
