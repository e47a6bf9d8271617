package conv

import (
	"fmt"
	"testing"
)

// TestPositionWalk walks every output position of convolutions of one to
// four spatial axes (the last past the three a position holds in place)
// and checks, for each, the input position every kernel offset reads
// (or the padding) against the one the geometry gives, and whether the
// kernel lies inside the image.
func TestPositionWalk(t *testing.T) {
	for _, c := range []struct {
		in, kernel, strides, dil, pads []int
	}{
		{[]int{7}, []int{3}, []int{2}, []int{1}, []int{1, 2}},
		{[]int{5, 6}, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1, 1, 1}},
		{[]int{6, 5}, []int{2, 3}, []int{2, 1}, []int{2, 1}, []int{0, 1, 2, 0}},
		{[]int{3, 4, 5}, []int{2, 3, 2}, []int{1, 2, 1}, []int{1, 1, 2}, []int{1, 0, 1, 0, 1, 1}},
		{[]int{3, 3, 4, 4}, []int{2, 1, 3, 2}, []int{1, 1, 2, 1}, []int{1, 1, 1, 1}, []int{0, 1, 1, 0, 1, 0, 1, 1}},
	} {
		t.Run(fmt.Sprint(c.in), func(t *testing.T) {
			d := len(c.in)
			x := append([]int{1, 2}, c.in...)
			w := append([]int{3, 2}, c.kernel...)
			g, err := forwardGeometry("Conv", x, w, "", 1, ints64(c.kernel), ints64(c.strides), ints64(c.dil), ints64(c.pads))
			if err != nil {
				t.Fatal(err)
			}
			tp := newTaps(g)
			pos := tp.pos(0)
			if wide := pos.wide != nil; wide != (d > 3) {
				t.Fatalf("%d axes: wide %v", d, wide)
			}
			inStr := make([]int, d)
			for i, s := d-1, 1; i >= 0; i-- {
				inStr[i], s = s, s*c.in[i]
			}
			o := make([]int, d) // the output position, row-major
			for p := range g.OutSize() {
				inside := true
				for kidx := range len(tp.lin) {
					want := 0
					for i := 0; i < d && want >= 0; i++ {
						v := o[i]*c.strides[i] - c.pads[i] + tp.disp[kidx*d+i]
						if v < 0 || v >= c.in[i] {
							want = -1
							break
						}
						want += v * inStr[i]
					}
					if want < 0 {
						inside = false
					}
					if got := pos.at(kidx); got != want {
						t.Fatalf("position %d %v, offset %d: reads %d, want %d", p, o, kidx, got, want)
					}
				}
				if pos.interior != inside {
					t.Fatalf("position %d %v: interior %v, want %v", p, o, pos.interior, inside)
				}
				pos.next()
				for i := d - 1; i >= 0; i-- {
					if o[i]++; o[i] < g.Out[i] {
						break
					}
					o[i] = 0
				}
			}
			// A position started anywhere walks on as one started at 0.
			mid := tp.pos(g.OutSize() / 2)
			pos = tp.pos(0)
			for range g.OutSize() / 2 {
				pos.next()
			}
			for kidx := range len(tp.lin) {
				if a, b := mid.at(kidx), pos.at(kidx); a != b {
					t.Fatalf("started at %d: offset %d reads %d, walked there %d", g.OutSize()/2, kidx, a, b)
				}
			}
			// A run of interior positions is the one walked: as long
			// (within the row and the n asked for), and a position skipped
			// to its end, then stepped on, is the one walked there.
			lastOut := g.Out[d-1]
			for p := range g.OutSize() {
				for _, n := range []int{1, 2, g.OutSize()} {
					walk := tp.pos(p)
					want := 0
					for want < n && walk.interior && (want == 0 || (p+want)%lastOut != 0) {
						want++
						walk.next()
					}
					pos := tp.pos(p)
					run := pos.interiorRun(n)
					if run != want {
						t.Fatalf("position %d: a run of %d of at most %d interior positions, want %d", p, run, n, want)
					}
					if run == 0 {
						continue
					}
					pos.skip(run - 1)
					there := tp.pos(p + run - 1)
					if !pos.interior || pos.lin != there.lin {
						t.Fatalf("position %d skipped %d on: interior %v at %d, walked there %v %d", p, run-1, pos.interior, pos.lin, there.interior, there.lin)
					}
					pos.next()
					there.next()
					if p+run < g.OutSize() && (pos.interior != there.interior || pos.at(0) != there.at(0)) {
						t.Fatalf("position %d skipped %d on and stepped: interior %v reads %d, walked there %v %d", p, run-1, pos.interior, pos.at(0), there.interior, there.at(0))
					}
				}
			}
		})
	}
}
