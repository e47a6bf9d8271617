package elem

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// broadcastRef computes f over a and b of shapes as and bs with
// broadcasting, one output element at a time from its coordinates: the
// independent reference for Map2.
func broadcastRef(a, b []float32, as, bs []int, f func(x, y float32) float32) []float32 {
	out, err := ops.BroadcastShapes(as, bs)
	if err != nil {
		panic(err)
	}
	sa, sb := tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out)
	r := make([]float32, ops.ProdInts(out))
	coord := make([]int, len(out))
	for i := range r {
		rem, pa, pb := i, 0, 0
		for d := len(out) - 1; d >= 0; d-- {
			coord[d] = rem % out[d]
			rem /= out[d]
			pa += coord[d] * sa[d]
			pb += coord[d] * sb[d]
		}
		r[i] = f(a[pa], b[pb])
	}
	return r
}

// TestMap2Split: Map2 split across two cores gives the bits of one core
// and of the element-by-element reference, for operands that broadcast
// in every way a Layout merges (one run, a scalar, per channel, a last
// axis, an outer product, more merged dimensions than map2Range keeps on
// its stack), at sizes whose chunks start mid-run.
func TestMap2Split(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	one, two := gemm.New(dispatch.Default(), 1), gemm.New(dispatch.Default(), 2)
	defer one.Close()
	defer two.Close()
	f := func(x, y float32) float32 { return x*3 - y }
	kernel := func(r, a, b []float32, ia, ib int) {
		pa, pb := 0, 0
		for i := range r {
			r[i] = f(a[pa], b[pb])
			pa += ia
			pb += ib
		}
	}
	for _, shapes := range [][2][]int{
		{{3, 7, 61, 53}, {3, 7, 61, 53}},
		{{3, 7, 61, 53}, {}},
		{{1}, {5, 97, 211}},
		{{3, 17, 41, 43}, {17, 1, 1}},
		{{97, 13, 71}, {71}},
		{{1, 31, 1, 2}, {389, 1, 23, 1}},
		{{4, 1, 4, 1, 4, 1, 4, 1, 4, 1}, {1, 3, 1, 3, 1, 3, 1, 3, 1, 3}},
	} {
		as, bs := shapes[0], shapes[1]
		a, b := make([]float32, ops.ProdInts(as)), make([]float32, ops.ProdInts(bs))
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		want := broadcastRef(a, b, as, bs, f)
		for _, e := range []*gemm.Engine{one, two} {
			var probe gemm.Probe
			c := ops.NewContext(context.Background(), e.Probed(&probe), false)
			shape, got, err := Map2(c, a, b, as, bs, kernel)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%v with %v on %d thread(s)", as, bs, e.Threads())
			if split := probe.Take(); !split {
				t.Errorf("%s: the loop gave its engine no work that splits", what)
			}
			if ops.ProdInts(shape) != len(want) || len(got) != len(want) {
				t.Fatalf("%s: shape %v, %d elements, want %d", what, shape, len(got), len(want))
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: [%d] = %v, the reference %v", what, i, got[i], want[i])
				}
			}
		}
	}
}

// TestMap2Cancelled: Map2 under an ended request returns its error.
func TestMap2Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	two := gemm.New(dispatch.Default(), 2)
	defer two.Close()
	a := make([]float32, 1<<20)
	_, _, err := MapFunc(ops.NewContext(ctx, two, false), a, a[:1], []int{len(a)}, []int{1}, func(x, y float32) float32 { return x + y })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Map2 under a cancelled request: %v", err)
	}
}

// TestInRanges: InRanges visits every unit of [0, n) exactly once, in
// ranges that do not overlap, whether the loop runs whole on the caller
// (at most RangeWork), in blocks on one core, or split across two.
func TestInRanges(t *testing.T) {
	one, two := gemm.New(dispatch.Default(), 1), gemm.New(dispatch.Default(), 2)
	defer one.Close()
	defer two.Close()
	const cost = 7
	for _, n := range []int{0, 1, RangeWork / cost, RangeWork/cost + 1, 3*RangeWork/cost - 5, 40*RangeWork/cost + 13} {
		for _, e := range []*gemm.Engine{one, two} {
			seen := make([]atomic.Int32, n)
			err := InRanges(ops.NewContext(context.Background(), e, false), n, cost, func(lo, hi int) {
				if lo < 0 || hi > n || lo >= hi {
					t.Errorf("n=%d: range [%d, %d)", n, lo, hi)
					return
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range seen {
				if k := seen[i].Load(); k != 1 {
					t.Fatalf("n=%d on %d thread(s): unit %d visited %d times", n, e.Threads(), i, k)
				}
			}
		}
	}
}
