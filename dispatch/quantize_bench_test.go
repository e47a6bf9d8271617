package dispatch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/quant"
)

// BenchmarkQuantizeRow quantizes one activation row (MinMax, then
// QuantizeU8): a run of three taps of 64 channels, a 3×3×64
// convolution's im2col row and a wider one, on every table.
func BenchmarkQuantizeRow(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{192, 576, 4608} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		u := make([]uint8, n)
		for _, tb := range Available() {
			b.Run(fmt.Sprintf("%s/%d", tb.Name, n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				b.ReportAllocs()
				for b.Loop() {
					lo, hi, _ := tb.MinMax(x)
					_, inv, zp := quant.RowParams(lo, hi)
					tb.QuantizeU8(x, inv, zp, u)
				}
			})
		}
	}
}

// BenchmarkQuantizeDivU8 quantizes a row of a dynamically quantized
// product (DynamicQuantizeLinear's bytes: a division a value) on every
// table.
func BenchmarkQuantizeDivU8(b *testing.B) {
	r := rand.New(rand.NewPCG(8, 8))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	u := make([]uint8, len(x))
	for _, tb := range Available() {
		b.Run(tb.Name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				tb.QuantizeDivU8(x, 0.021, 131, u)
			}
		})
	}
}
