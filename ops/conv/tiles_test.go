package conv

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
)

// TestConvTransposeStrided checks the strided tile transpose on every
// table against its definition, with row strides wider than the tile and
// sentinels around and between dst's rows.
func TestConvTransposeStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	sentinel := float32(-7.25)
	for rows := 1; rows <= 19; rows++ {
		for cols := 1; cols <= 41; cols += 2 {
			lds, ldd := cols+3, rows+5
			src := randomFloats(r, []int{rows * lds})
			srcCopy := slices.Clone(src)
			want := make([]float32, cols*ldd+16)
			for i := range want {
				want[i] = sentinel
			}
			for c := 0; c < cols; c++ {
				for i := 0; i < rows; i++ {
					want[8+c*ldd+i] = src[i*lds+c]
				}
			}
			for _, tb := range dispatch.Available() {
				got := make([]float32, cols*ldd+16)
				for i := range got {
					got[i] = sentinel
				}
				transposeStrided(tb, got[8:], ldd, src, lds, rows, cols)
				if !slices.Equal(got, want) {
					t.Fatalf("%v %d×%d: the transpose differs from its definition", tb, rows, cols)
				}
				if !slices.Equal(src, srcCopy) {
					t.Fatalf("%v %d×%d: src modified", tb, rows, cols)
				}
			}
		}
	}
}

// TestTileRows: tiles are whole row tiles of every table (a multiple of
// 12), between 24 and 240 positions, and within the budget when they can
// be.
func TestTileRows(t *testing.T) {
	for _, w := range []int{0, 1, 9, 100, 136, 137, 1000, 1365, 1366, 5000, 1 << 20} {
		n := tileRows(w)
		if n%12 != 0 || n < 24 || n > 240 || n > 24 && n*w > tileBudget {
			t.Errorf("tileRows(%d) = %d", w, n)
		}
	}
}
