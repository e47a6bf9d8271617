package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// BenchmarkMatMulColdWeights multiplies the few rows of a batch-1
// convolution's late layers (ResNet-50's 7×7 and 14×14 stages) by weights
// that come from memory, as a model's layers do one after another: the
// product cycles through copies of its weights larger than a last-level
// cache together. It runs on every vector table the CPU has;
// BenchmarkQMatMulColdWeights is its int8 twin.
func BenchmarkMatMulColdWeights(b *testing.B) {
	coldEveryTable(b, func(r *rand.Rand, e *Engine, k, n int) (int, func(i int, a, c []float32, m int) error) {
		ws := make([]*FWeights, max(2, (96<<20)/(4*k*n)))
		for i := range ws {
			wf := make([]float32, k*n)
			for j := range wf {
				wf[j] = float32(r.NormFloat64())
			}
			ws[i] = PackF(k, n, wf, n)
		}
		return len(ws), func(i int, a, c []float32, m int) error { return e.MatMul(a, m, ws[i], c) }
	})
}

// BenchmarkQMatMulColdWeights is BenchmarkMatMulColdWeights on int8
// weights (a quarter of the bytes, read four times as fast).
func BenchmarkQMatMulColdWeights(b *testing.B) {
	coldEveryTable(b, func(r *rand.Rand, e *Engine, k, n int) (int, func(i int, a, c []float32, m int) error) {
		ws := make([]*QWeights, max(2, (96<<20)/(k*n)))
		for i := range ws {
			ws[i] = randomPackedQ(b, r, k, n)
		}
		return len(ws), func(i int, a, c []float32, m int) error { return e.QMatMul(a, m, ws[i], c) }
	})
}

// coldEveryTable runs the cold shapes on every vector table: weights
// makes an engine's copies of a shape's weights and the product by copy
// i.
func coldEveryTable(b *testing.B, weights func(r *rand.Rand, e *Engine, k, n int) (int, func(i int, a, c []float32, m int) error)) {
	for _, tb := range dispatch.Available() {
		if tb == dispatch.Reference() {
			continue
		}
		b.Run(tb.Name, func(b *testing.B) {
			for _, sh := range [][3]int{{49, 512, 2048}, {49, 2048, 512}, {49, 4608, 512}, {196, 1024, 256}, {196, 2304, 256}} {
				m, k, n := sh[0], sh[1], sh[2]
				r := rand.New(rand.NewPCG(2, 2))
				a := randomActivations(r, m, k)
				c := make([]float32, m*n)
				e := New(tb, 1)
				defer e.Close()
				copies, mul := weights(r, e, k, n)
				b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
					i := 0
					for b.Loop() {
						if err := mul(i%copies, a, c, m); err != nil {
							b.Fatal(err)
						}
						i++
					}
					b.ReportMetric(float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
				b.Run(fmt.Sprintf("%dx%dx%d/warm", m, k, n), func(b *testing.B) {
					for b.Loop() {
						if err := mul(0, a, c, m); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		})
	}
}
