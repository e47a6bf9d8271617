package dispatch

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTouchRowsEveryTable runs every table's TouchRows over blocks that
// end exactly where their slices do (the last row's last value is the
// slice's last), with row strides past and equal to the block's width and
// widths that end inside a cache line: the values stay as they were, and
// a slice one value short of the block is refused with a panic, before
// any load.
func TestTouchRowsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 61))
	for _, tb := range Available() {
		for _, s := range []struct{ rows, cols, ld int }{
			{1, 1, 1}, {1, 17, 17}, {3, 16, 16}, {5, 33, 40}, {7, 256, 256}, {96, 100, 1024}, {2, 1, 4096},
		} {
			c := make([]float32, (s.rows-1)*s.ld+s.cols)
			for i := range c {
				c[i] = r.Float32()
			}
			want := slices.Clone(c)
			tb.TouchRows(c, s.ld, s.rows, s.cols)
			if !slices.Equal(c, want) {
				t.Fatalf("%v %+v: TouchRows changed the values", tb, s)
			}
			tb.TouchRows(c, s.ld, 0, s.cols) // no rows, no columns: nothing to load
			tb.TouchRows(c[:0], s.ld, s.rows, 0)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("%v %+v: a slice one value short was not refused", tb, s)
					}
				}()
				tb.TouchRows(c[:len(c)-1], s.ld, s.rows, s.cols)
			}()
		}
	}
}
