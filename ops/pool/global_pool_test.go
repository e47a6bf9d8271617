package pool

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkGlobalAveragePool is ResNet-50's head, 1×2048×7×7: the
// compiled node, its kernel alone, and copying the input (the memory
// floor).
func BenchmarkGlobalAveragePool(b *testing.B) {
	m, err := compile(22, "GlobalAveragePool", 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	x := opstest.Normal(rand.New(rand.NewPCG(8, 8)), 1, 2048, 7, 7)
	in := []*tensor.Tensor{x}
	xs := x.Data.([]float32)
	b.Run("node", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Run(opstest.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			globalPool(xs, 2048, 49, true, dispatch.Default().PoolSum, nil)
		}
	})
	b.Run("copy", func(b *testing.B) {
		dst := make([]float32, len(xs))
		b.SetBytes(int64(4 * x.Len()))
		for b.Loop() {
			copy(dst, xs)
		}
	})
}
