package gemm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/quant"
)

// gridByte is the reference of one value quantized on a grid: QuantizeLinear
// to UINT8, its quotient a float32 division.
func gridByte(v, scale float32, zp int32) uint8 {
	q := math.RoundToEven(float64(v/scale)) + float64(zp)
	return uint8(math.Min(math.Max(q, 0), 255))
}

// TestGridActivations quantizes rows on the grid of a QDQ pair (UINT8 with
// zero point 131, and an INT8 one's shifted zero point 128): each grid
// value gives back its integer, values off the grid round half to even
// and values past its ends clamp, as QuantizeLinear does; the rows are
// wide, and their product is the product of the values they stand for on
// every table that multiplies the whole byte range, refused on the
// others. QuantizeStatic writes the rows' bytes, SetStatic their
// parameters.
func TestGridActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const m, k, n = 37, 70, 20
	wf := make([]float32, k*n)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	w, err := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
	if err != nil {
		t.Fatal(err)
	}
	wq := w.Dequantize()
	pw, err := PackQ(w)
	if err != nil {
		t.Fatal(err)
	}
	for _, zp := range []int32{131, 128} {
		const scale = float32(0.037)
		a, err := GridActivations(scale, zp)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Static() || !a.Grid() {
			t.Fatal("grid activations are not static")
		}
		x := make([]float32, m*k)
		want := make([]uint8, m*k)
		for i := range x {
			q := r.IntN(256)
			x[i], want[i] = float32(q-int(zp))*scale, uint8(q) // DequantizeLinear's value
			switch i % 11 {
			case 3: // off the grid
				x[i] = float32(r.NormFloat64() * 3)
				want[i] = gridByte(x[i], scale, zp)
			case 7: // past an end
				x[i] = float32(400*(1-2*(i%2))) * scale
				want[i] = gridByte(x[i], scale, zp)
			case 9: // a tie: half to even
				x[i] = (float32(q-int(zp)) + 0.5) * scale
				want[i] = gridByte(x[i], scale, zp)
			}
		}
		for _, e := range engines(t) {
			var rows QRows
			if err := e.QuantizeRowsAs(&rows, x, m, k, k, a); err != nil {
				t.Fatal(err)
			}
			if !rows.Wide() {
				t.Fatalf("%s: grid rows not wide", name(e))
			}
			for i := range m * k {
				if b := rows.u[i/k*rows.ldu+i%k]; b != want[i] {
					t.Fatalf("%s zp %d: value %d (%v) quantized to %d, want %d", name(e), zp, i, x[i], b, want[i])
				}
			}
			c := make([]float32, m*n)
			err := e.QMatMulRows(&rows, pw, c, n)
			if !e.t.FullRange {
				if err == nil {
					t.Fatalf("%s: wide rows multiplied on a table that sums only 7-bit ones", name(e))
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range m {
				for j := range n {
					var ref float64
					for kk := range k {
						ref += float64(int32(want[i*k+kk])-zp) * float64(scale) * float64(wq[kk*n+j])
					}
					if d := math.Abs(float64(c[i*n+j]) - ref); d > 1e-4*(1+math.Abs(ref)) {
						t.Fatalf("%s zp %d: c[%d][%d] = %v, want %v", name(e), zp, i, j, c[i*n+j], ref)
					}
				}
			}
			img := make([]uint8, len(x))
			if err := e.QuantizeStatic(img, x, a); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(img, want) {
				t.Fatalf("%s: QuantizeStatic's bytes differ from the rows'", name(e))
			}
			var set QRows
			if _, _, err := set.PrepareRows(2, k); err != nil {
				t.Fatal(err)
			}
			if err := set.SetStatic(a); err != nil || !set.Wide() || set.zp[1] != zp || set.scale[1] != scale {
				t.Fatalf("%s: SetStatic: %v, wide %v, zero point %d, scale %v", name(e), err, set.Wide(), set.zp[1], set.scale[1])
			}
		}
		x[5*k+2] = float32(math.Inf(1))
		if err := engines(t)[0].QuantizeRowsAs(new(QRows), x, m, k, k, a); !errors.Is(err, ErrNotFinite) {
			t.Errorf("an infinity on a grid: %v, want ErrNotFinite", err)
		}
	}
	for _, bad := range []struct {
		s  float32
		zp int32
	}{{0, 0}, {-1, 0}, {float32(math.NaN()), 0}, {float32(math.Inf(1)), 0}, {1, 256}, {1, -1}} {
		if _, err := GridActivations(bad.s, bad.zp); err == nil {
			t.Errorf("GridActivations(%v, %d): no error", bad.s, bad.zp)
		}
	}
}
