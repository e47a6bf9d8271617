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
// cache together. It runs on every vector table the CPU has.
func BenchmarkMatMulColdWeights(b *testing.B) {
	for _, tb := range dispatch.Available() {
		if tb == dispatch.Reference() {
			continue
		}
		b.Run(tb.Name, func(b *testing.B) { benchColdWeights(b, tb) })
	}
}

func benchColdWeights(b *testing.B, tb *dispatch.Table) {
	for _, sh := range [][3]int{{49, 512, 2048}, {49, 2048, 512}, {49, 4608, 512}, {196, 1024, 256}, {196, 2304, 256}} {
		m, k, n := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(2, 2))
		a := randomActivations(r, m, k)
		copies := max(2, (96<<20)/(4*k*n))
		ws := make([]*FWeights, copies)
		for i := range ws {
			wf := make([]float32, k*n)
			for j := range wf {
				wf[j] = float32(r.NormFloat64())
			}
			ws[i] = PackF(k, n, wf, n)
		}
		c := make([]float32, m*n)
		e := New(tb, 1)
		defer e.Close()
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := e.MatMul(a, m, ws[i%copies], c); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		b.Run(fmt.Sprintf("%dx%dx%d/warm", m, k, n), func(b *testing.B) {
			for b.Loop() {
				if err := e.MatMul(a, m, ws[0], c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
