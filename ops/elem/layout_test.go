package elem

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestLayoutRuns checks that the common CNN and transformer shapes
// become the few long runs the fast loops serve.
func TestLayoutRuns(t *testing.T) {
	for _, c := range []struct {
		a, b           []int
		dims           []int
		incA, incB     int
		wantRunsOfSize int
	}{
		{[]int{1, 8, 5, 5}, []int{1, 8, 5, 5}, []int{200}, 1, 1, 200},           // same shape
		{[]int{1, 8, 5, 5}, nil, []int{200}, 1, 0, 200},                         // scalar
		{[]int{1, 8, 5, 5}, []int{8, 1, 1}, []int{8, 25}, 1, 0, 25},             // per channel over NCHW
		{[]int{2, 8, 5, 5}, []int{1, 8, 1, 1}, []int{2, 8, 25}, 1, 0, 25},       // per channel, batch 2
		{[]int{4, 3, 16}, []int{16}, []int{12, 16}, 1, 1, 16},                   // last-axis vector
		{[]int{1}, []int{3, 1}, []int{3}, 0, 1, 3},                              // both broadcast
		{[]int{2, 3}, []int{2, 1}, []int{2, 3}, 1, 0, 3},                        // per row
		{nil, nil, []int{1}, 0, 0, 1},                                           // rank 0
		{[]int{0, 3}, []int{3}, []int{0, 3}, 1, 1, 3},                           // zero-size
		{[]int{5, 1, 7}, []int{1, 6, 1}, []int{5, 6, 7}, 1, 0, 7},               // outer product-like
		{[]int{2, 1, 1, 4}, []int{2, 1, 1, 4}, []int{8}, 1, 1, 8},               // size-1 dims dropped
		{[]int{1, 1, 1}, []int{1}, []int{1}, 0, 0, 1},                           // all ones
		{[]int{3, 1, 4, 1}, []int{3, 1, 4, 1}, []int{12}, 1, 1, 12},             // interior ones
		{[]int{3, 2, 4}, []int{3, 1, 4}, []int{3, 2, 4}, 1, 1, 4},               // middle broadcast
		{[]int{1, 256, 56, 56}, []int{256, 1, 1}, []int{256, 3136}, 1, 0, 3136}, // ResNet stage
	} {
		l, err := NewLayout(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.dims, c.dims) || l.Inc(1) != c.incA || l.Inc(2) != c.incB || l.Run() != c.wantRunsOfSize {
			t.Errorf("%v and %v: dims %v, incs %d %d, run %d; want %v, %d %d, %d", c.a, c.b, l.dims, l.Inc(1), l.Inc(2), l.Run(), c.dims, c.incA, c.incB, c.wantRunsOfSize)
		}
	}
}

// TestLayoutErrors: operands that do not broadcast, or whose broadcast
// has too many elements, are input errors.
func TestLayoutErrors(t *testing.T) {
	for _, c := range [][][]int{
		{{2}, {3}},
		{{2, 3}, {3}, {4, 1, 2}},     // three operands, the last not fitting
		{{1 << 16, 1}, {1, 1 << 16}}, // beyond tensor.MaxElements
	} {
		if _, err := NewLayout(c...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("NewLayout%v: %v, want an input error", c, err)
		}
	}
}

// randShapes returns two shapes that broadcast together: random ranks up
// to 4, dimensions 0 to 4, with 1s (and missing leading dimensions) where
// one side broadcasts.
func randShapes(r *rand.Rand) (a, b []int) {
	rank := r.IntN(5)
	out := make([]int, rank)
	for i := range out {
		out[i] = r.IntN(4) + 1
		if r.IntN(12) == 0 {
			out[i] = 0
		}
	}
	pick := func() []int {
		s := slices.Clone(out[r.IntN(rank+1):])
		for i := range s {
			if r.IntN(3) == 0 {
				s[i] = 1
			}
		}
		return s
	}
	return pick(), pick()
}

// TestMapFuncMatchesIndexWalk checks MapFunc (and so Map2 and the
// layout's runs) over random broadcasting shapes against the definition:
// every output index walked, each operand read at its broadcast offset.
func TestMapFuncMatchesIndexWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 400; trial++ {
		as, bs := randShapes(r)
		na, _ := tensor.NumElements(as)
		nb, _ := tensor.NumElements(bs)
		a, b := make([]int32, na), make([]int32, nb)
		for i := range a {
			a[i] = int32(r.IntN(1000))
		}
		for i := range b {
			b[i] = int32(r.IntN(1000))
		}
		f := func(x, y int32) int64 { return int64(x)*1000 + int64(y) }
		shape, got, err := MapFunc(nil, a, b, as, bs, f)
		if err != nil {
			t.Fatalf("%v and %v: %v", as, bs, err)
		}
		out, err := ops.BroadcastShape(as, bs)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := tensor.NumElements(out)
		want := make([]int64, 0, n)
		it := tensor.NewIter(out, tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out))
		for it.Next() {
			want = append(want, f(a[it.Off(0)], b[it.Off(1)]))
		}
		if !slices.Equal(shape, out) || !slices.Equal(got, want) {
			t.Fatalf("%v and %v: got %v %v, want %v %v", as, bs, shape, got, out, want)
		}
	}
}
