package pool

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestMaxPoolIndicesAndStorageOrder checks Indices by hand: row-major and
// column-major flat indices including the batch and channel, and ties
// resolved to the first maximum.
func TestMaxPoolIndicesAndStorageOrder(t *testing.T) {
	// Two planes of 3×4; 2×2 windows, stride 2.
	x := tensor.From([]int{1, 2, 3, 4}, []float32{
		1, 9, 2, 3,
		4, 5, 8, 8,
		0, 0, 7, 6,

		5, 5, 1, 2,
		5, 1, 3, 9,
		2, 0, 4, 4,
	})
	for _, c := range []struct {
		order int64
		want  []int64
	}{
		{0, []int64{1, 6, 12, 19}},
		{1, []int64{3, 7, 12, 22}}, // column-major: h + 3·w within a plane
	} {
		out, err := run(t, 12, "MaxPool", x, 2, opstest.AttrInts("kernel_shape", 2, 2), opstest.AttrInts("strides", 2, 2), opstest.AttrInt("storage_order", c.order))
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data.([]float32); !slices.Equal(got, []float32{9, 8, 5, 9}) {
			t.Errorf("storage_order %d: Y = %v", c.order, got)
		}
		if got := out[1].Data.([]int64); !slices.Equal(got, c.want) || out[1].DType != tensor.Int64 {
			t.Errorf("storage_order %d: Indices = %v, want %v", c.order, got, c.want)
		}
	}
	// 3-D, column-major: index = h + w·H + d·H·W.
	x3 := tensor.From([]int{1, 1, 2, 2, 2}, []float32{0, 1, 2, 3, 4, 5, 6, 7})
	out, err := run(t, 12, "MaxPool", x3, 2, opstest.AttrInts("kernel_shape", 2, 2, 2), opstest.AttrInt("storage_order", 1))
	if err != nil {
		t.Fatal(err)
	}
	// The maximum, 7, is at (h, w, d) = (1, 1, 1): 1 + 1·2 + 1·4.
	if got := out[1].Data.([]int64); !slices.Equal(got, []int64{7}) {
		t.Errorf("3-D column-major index %v", got)
	}
}

// BenchmarkMaxPool is ResNet-50's stem pooling, 3×3 stride 2 pad 1 over
// 1×64×112×112: the 2-D path against the N-d reference.
func BenchmarkMaxPool(b *testing.B) {
	s, _ := newSpec("MaxPool", "NOTSET", []int64{3, 3}, []int64{1, 1, 1, 1}, []int64{2, 2}, nil, false)
	g, _ := s.geometry([]int{1, 64, 112, 112})
	x := opstest.Normal(rand.New(rand.NewPCG(7, 7)), 1, 64, 112, 112).Data.([]float32)
	y := make([]float32, g.Planes()*g.OutSize())
	b.Run("2d", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			pool2D(x, y, g, poolMax, nil)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			maxPoolND(x, y, nil, g, nil)
		}
	})
}
