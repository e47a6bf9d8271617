//go:build gc && !purego

package arm64

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/kernels"
)

// TestGeluNEONRounded compares GeluNEON with kernels.GeluOne, every
// product of which is rounded on every architecture, bit for bit
// (any NaN for a NaN) on every length to 70 and a long row, with and
// without bias: normal values, every power of two's neighbourhood from
// subnormals to float32's largest, ±0, ±Inf and NaN.
func TestGeluNEONRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 20))
	var special []float32
	for e := -149; e <= 127; e++ {
		v := float32(math.Ldexp(1, e))
		special = append(special, v, -v, math.Nextafter32(v, 0), -math.Nextafter32(v, 0))
	}
	special = append(special, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 70, 4099} {
		for _, withBias := range []bool{false, true} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(r.NormFloat64() * 4)
				if r.IntN(3) == 0 {
					src[i] = special[r.IntN(len(special))]
				}
			}
			var bias []float32
			if withBias {
				bias = make([]float32, n)
				for i := range bias {
					bias[i] = float32(r.NormFloat64())
				}
			}
			dst := make([]float32, n+1)[1:] // unaligned
			GeluNEON(dst, src, bias)
			for i, x := range src {
				if bias != nil {
					x += bias[i]
				}
				want := kernels.GeluOne(x)
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(dst[i] != dst[i] && want != want) {
					t.Fatalf("n=%d bias=%v: gelu(%v) = %v (%08x), want %v (%08x)", n, withBias, x, dst[i], math.Float32bits(dst[i]), want, math.Float32bits(want))
				}
			}
		}
	}
}
