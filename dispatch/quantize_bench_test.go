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

// BenchmarkQuantizeRows quantizes a block of activation rows in one call
// (QuantizeRowsU8), on every table: the input of a 1×1 convolution of
// ResNet-50's first stage, 3,136 pixels of 64 or 256 channels (0.8 and
// 3.2 MB of float32, past a core's L2), of its last stage, 49 pixels
// of 2,048, and a tile's 48 rows of 64 and 256 (in the first-level
// cache: the kernel's own rate, where the larger blocks wait on memory).
func BenchmarkQuantizeRows(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, sh := range [][2]int{{3136, 64}, {3136, 256}, {49, 2048}, {48, 64}, {48, 256}} {
		m, k := sh[0], sh[1]
		a := make([]float32, m*k)
		for i := range a {
			a[i] = max(0, float32(r.NormFloat64()))
		}
		u := make([]uint8, m*k)
		zp, scale := make([]int32, m), make([]float32, m)
		for _, tb := range Available() {
			b.Run(fmt.Sprintf("%s/%dx%d", tb.Name, m, k), func(b *testing.B) {
				b.SetBytes(int64(4 * m * k))
				for b.Loop() {
					if bad := tb.QuantizeRowsU8(a, k, m, k, u, k, zp, scale); bad != -1 {
						b.Fatalf("row %d refused", bad)
					}
				}
			})
		}
	}
}
