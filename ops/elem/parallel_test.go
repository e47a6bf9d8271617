package elem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
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
		what := fmt.Sprintf("%v with %v", as, bs)
		got := opstest.SplitRun(t, what, opstest.Func(func(c *ops.Context, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
			shape, r, err := Map2(c, a, b, as, bs, kernel)
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{tensor.From(shape, r)}, nil
		}))[0]
		if ops.ProdInts(got.Shape) != len(want) || !opstest.SameBits(got.Data, want) {
			t.Fatalf("%s: shape %v, %d elements, differs from the reference", what, got.Shape, got.Len())
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
