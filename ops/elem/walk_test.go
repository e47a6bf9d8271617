package elem

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
)

// TestWalkStops: a walk stops within about ops.TickEvery elements of the
// request's end, whether its runs are short or long, and a walk under a
// live context visits every element once.
func TestWalkStops(t *testing.T) {
	for _, shapes := range [][2][]int{
		{{8 * ops.TickEvery, 2}, {1, 2}}, // runs of 2
		{{8 * ops.TickEvery}, {1}},       // one run
		{{4, 2 * ops.TickEvery}, {4, 1}}, // runs of 2·TickEvery
	} {
		l, err := NewLayout(shapes[0], shapes[1])
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		if err := Walk(ops.NewContext(context.Background(), nil, false), l, func(_ []int, n int) { seen += n }); err != nil || seen != l.Len() {
			t.Fatalf("%v: walked %d of %d elements, %v", shapes, seen, l.Len(), err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := ops.NewContext(ctx, nil, false)
		seen = 0
		err = Walk(c, l, func(_ []int, n int) {
			if seen += n; seen >= ops.TickEvery {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%v: %v, want the context's error", shapes, err)
		}
		if limit := 2*ops.TickEvery + min(l.Run(), ops.TickEvery); seen > limit {
			t.Errorf("%v: walked %d elements after the request ended at %d", shapes, seen, ops.TickEvery)
		}
		cancel()
	}
}
