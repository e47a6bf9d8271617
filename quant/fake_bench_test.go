package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// BenchmarkFakeQuantPair times the pair on 4,096 values as the operators
// call it, on every table's kernels (tb.FakeQuantKernels()) and on none
// (the scalar loop): ApplyVector (the pair's outputs, from a source) and
// ApplyTable (a function of them, tabulated, in place as the
// convolutions' epilogues run it).
func BenchmarkFakeQuantPair(b *testing.B) {
	f := quant.NewFakeQuant(0.0235, 128, 0.0235, 128, false)
	x := make([]float32, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]float32, len(x))
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i)*0.5 - 3
	}
	type named struct {
		name string
		k    quant.FakeQuantKernels
	}
	var ks []named
	for _, tb := range dispatch.Available() {
		ks = append(ks, named{tb.Name, tb.FakeQuantKernels()})
	}
	ks = append(ks, named{"scalar", quant.FakeQuantKernels{}}) // the zero value: the scalar loop
	for _, nk := range ks {
		k := nk.k
		b.Run("ApplyVector/"+nk.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				f.ApplyVector(y, x, k)
			}
		})
		b.Run("ApplyTable/"+nk.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				copy(y, x)
				f.ApplyTable(y, y, &lut, k)
			}
		})
	}
}
