package norm

import (
	"github.com/quantserve/quantserve/ops/opstest"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAffineChannelsUnrolled checks the 4-wide batch-normalization loop
// against one element at a time, for every tail length.
func TestAffineChannelsUnrolled(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	for size := 0; size <= 13; size++ {
		C := 3
		x := opstest.Normal(r, 2*C*size).Data.([]float32)
		a, b := opstest.Normal(r, C).Data.([]float32), opstest.Normal(r, C).Data.([]float32)
		got, _ := affineChannels(x, a, b, size, nil)
		for i, v := range x {
			c := i / size % C
			if want := v*a[c] + b[c]; got[i] != want {
				t.Fatalf("size %d: element %d = %v, want %v", size, i, got[i], want)
			}
		}
	}
	if got, _ := affineChannels([]float32{}, []float32{}, []float32{}, 4, nil); len(got) != 0 {
		t.Error("no channels")
	}
	if got, _ := affinePlanes([]float32{1, 2, 3, 4}, []float64{2, 3}, []float64{1, 0}, 2, nil); !slices.Equal(got, []float32{3, 5, 9, 12}) {
		t.Error("affinePlanes")
	}
}
