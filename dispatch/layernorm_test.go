package dispatch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// TestLayerNormEveryTable compares every table's LayerNormSums and
// LayerNormApply with the references bit for bit: every length to 131,
// lengths across LayerNormBlock, values with a large mean against their
// spread, special values (NaN, ±Inf, subnormals, both zeros), with and
// without a bias, in place and with sentinels around y. The reference's
// sums agree with a float64 computation of Σd and Σd² within float32
// rounding of the terms.
func TestLayerNormEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	lengths := []int{255, 256, 511, 512, 513, 768, 1024, 1031, 1600}
	for n := 0; n <= 131; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, kind := range []string{"normal", "offset", "special"} {
			x := vecInput(r, n, 2, kind == "special")
			if kind == "offset" {
				for i := range x {
					x[i] += 1000
				}
			}
			shift := float32(0)
			if n > 0 {
				shift = x[0]
			}
			s1, s2 := kernels.LayerNormSums(x, shift)
			if kind != "special" {
				var w1, w2, abs float64
				for _, v := range x {
					d := float64(v - shift)
					w1, w2, abs = w1+d, w2+d*d, abs+math.Abs(d)
				}
				if math.Abs(s1-w1) > 1e-5*abs+1e-6 || math.Abs(s2-w2) > 1e-5*w2+1e-6 {
					t.Fatalf("n=%d %s: reference sums %v %v, float64 %v %v", n, kind, s1, s2, w1, w2)
				}
			}
			scale, bias := vecInput(r, n, 1, false), vecInput(r, n, 1, false)
			mean, inv := float32(r.NormFloat64()), float32(1+r.Float64())
			want := make([]float32, n)
			kernels.LayerNormApply(want, x, scale, bias, mean, inv)
			wantNoBias := make([]float32, n)
			kernels.LayerNormApply(wantNoBias, x, scale, nil, mean, inv)
			for _, tb := range Available() {
				g1, g2 := tb.LayerNormSums(x, shift)
				if math.Float64bits(g1) != math.Float64bits(s1) || math.Float64bits(g2) != math.Float64bits(s2) {
					t.Fatalf("%v n=%d %s: sums %v %v, reference %v %v", tb, n, kind, g1, g2, s1, s2)
				}
				for _, shiftOut := range []int{0, 1} {
					got, outside := inGuard(make([]float32, n), shiftOut)
					tb.LayerNormApply(got, x, scale, bias, mean, inv)
					if i := diffBits(got, want); i >= 0 {
						t.Fatalf("%v n=%d %s: y[%d] = %#x, reference %#x", tb, n, kind, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%v n=%d: wrote outside y at %d", tb, n, i)
					}
					got, outside = inGuard(make([]float32, n), shiftOut)
					tb.LayerNormApply(got, x, scale, nil, mean, inv)
					if i := diffBits(got, wantNoBias); i >= 0 {
						t.Fatalf("%v n=%d %s, no bias: y[%d] = %#x, reference %#x", tb, n, kind, i, math.Float32bits(got[i]), math.Float32bits(wantNoBias[i]))
					}
					if i := outside(); i >= 0 {
						t.Fatalf("%v n=%d, no bias: wrote outside y at %d", tb, n, i)
					}
				}
				inPlace := slices.Clone(x)
				tb.LayerNormApply(inPlace, inPlace, scale, bias, mean, inv)
				if i := diffBits(inPlace, want); i >= 0 {
					t.Fatalf("%v n=%d %s, in place: y[%d] = %#x, reference %#x", tb, n, kind, i, math.Float32bits(inPlace[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}
