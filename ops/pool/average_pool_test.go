package pool

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
)

// BenchmarkAveragePool is a 3×3 stride-1 average over 1×256×28×28 (an
// Inception-style pooling branch).
func BenchmarkAveragePool(b *testing.B) {
	s, _ := newSpec("AveragePool", "NOTSET", []int64{3, 3}, []int64{1, 1, 1, 1}, []int64{1, 1}, nil, false)
	g, _ := s.geometry([]int{1, 256, 28, 28})
	x := opstest.Normal(rand.New(rand.NewPCG(7, 7)), 1, 256, 28, 28).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	b.Run("2d", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			pool2D(x, y, g, poolAvg, nil)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			avgPoolND(x, y, g, false, nil)
		}
	})
}
