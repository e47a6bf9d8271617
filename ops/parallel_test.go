package ops

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
)

// TestParallelForRunsEveryUnit: every unit runs once, on the Context's
// engine when the loop stays on the caller and on a one-core engine of
// the same kernels when it is split; a nil Context runs on the default
// engine.
func TestParallelForRunsEveryUnit(t *testing.T) {
	e := gemm.New(dispatch.Default(), 2)
	defer e.Close()
	for _, tc := range []struct {
		c        *Context
		n, work  int
		want     *gemm.Engine
		wantName string
	}{
		{NewContext(context.Background(), e, false), 100, 100, e, "the Context's engine"},
		{NewContext(context.Background(), e, false), 100, 1 << 30, e.Serial(), "its Serial engine"},
		{nil, 10, 10, gemm.Default(), "the default engine"},
		{&Context{}, 10, 10, gemm.Default(), "the default engine"},
	} {
		var mu sync.Mutex
		count := make([]int, tc.n)
		engines := map[*gemm.Engine]bool{}
		err := tc.c.ParallelFor(tc.n, tc.work, func(pe *gemm.Engine, i0, i1 int) error {
			mu.Lock()
			defer mu.Unlock()
			engines[pe] = true
			for i := i0; i < i1; i++ {
				count[i]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range count {
			if c != 1 {
				t.Fatalf("n %d work %d: unit %d ran %d times", tc.n, tc.work, i, c)
			}
		}
		if len(engines) != 1 || !engines[tc.want] {
			t.Errorf("n %d work %d: f was given %v, want %s", tc.n, tc.work, engines, tc.wantName)
		}
	}
}

// TestParallelForStopsWithTheRequest: under an ended request no chunk
// runs; a request cancelled during the loop starts no chunk after, and
// the loop returns the request's error; an error of f comes back as it
// is.
func TestParallelForStopsWithTheRequest(t *testing.T) {
	e := gemm.New(dispatch.Default(), 2)
	defer e.Close()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, work := range []int{64, 1 << 30} {
		ran := false
		err := NewContext(ended, e, false).ParallelFor(64, work, func(*gemm.Engine, int, int) error {
			ran = true
			return nil
		})
		if !errors.Is(err, context.Canceled) || ran {
			t.Errorf("work %d: %v (a chunk ran: %v), want %v before any chunk", work, err, ran, context.Canceled)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	after := 0
	err := NewContext(ctx, e, false).ParallelFor(64, 64, func(_ *gemm.Engine, i0, i1 int) error {
		if ctx.Err() != nil {
			after++
		}
		if i0 == 0 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || after != 0 {
		t.Errorf("cancelled in the first chunk: %v, %d chunks after; want %v and none", err, after, context.Canceled)
	}

	bad := errors.New("bad chunk")
	err = NewContext(context.Background(), e, false).ParallelFor(64, 1<<30, func(_ *gemm.Engine, i0, i1 int) error {
		if i0 <= 40 && 40 < i1 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Errorf("error %v, want %v", err, bad)
	}
}

// TestParallelRows: every row is computed once, rows cheap enough stay on
// the caller while costly ones split, a cost that overflows still splits,
// and a cancelled request stops it.
func TestParallelRows(t *testing.T) {
	e := gemm.New(dispatch.Default(), 2)
	defer e.Close()
	var p gemm.Probe
	c := NewContext(context.Background(), e.Probed(&p), false)
	for _, tc := range []struct {
		rows, cost int
		split      bool
	}{{128, 2 * 256 * ScalarCost, true}, {4, 16, false}, {64, int(^uint(0) >> 2), true}} {
		var mu sync.Mutex
		count := make([]int, tc.rows)
		err := c.ParallelRows(tc.rows, tc.cost, func(r0, r1 int) {
			mu.Lock()
			defer mu.Unlock()
			for r := r0; r < r1; r++ {
				count[r]++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for r, n := range count {
			if n != 1 {
				t.Fatalf("%d rows of cost %d: row %d ran %d times", tc.rows, tc.cost, r, n)
			}
		}
		if got := p.Take(); got != tc.split {
			t.Errorf("%d rows of cost %d: split %v, want %v", tc.rows, tc.cost, got, tc.split)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := NewContext(ctx, e, false).ParallelRows(1000, ScalarCost, func(int, int) { ran = true })
	if !errors.Is(err, context.Canceled) || ran {
		t.Errorf("a cancelled request: err %v, ran %v", err, ran)
	}
}

// TestContextErr: Err gives the request's error once it ends, and nil
// for a nil Context or one without a request (a loop's chunks call it
// from any goroutine).
func TestContextErr(t *testing.T) {
	var none *Context
	if err := none.Err(); err != nil {
		t.Errorf("nil Context: %v", err)
	}
	if err := new(Context).Err(); err != nil {
		t.Errorf("no request: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := NewContext(ctx, nil, false)
	if err := c.Err(); err != nil {
		t.Errorf("running request: %v", err)
	}
	cancel()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v, want context.Canceled", err)
	}
}

// TestContextEngine: a nil Context, and one made without an engine, run
// on gemm.Default(); one made with an engine runs on it.
func TestContextEngine(t *testing.T) {
	var none *Context
	if none.Engine() != gemm.Default() || new(Context).Engine() != gemm.Default() || NewContext(context.Background(), nil, false).Engine() != gemm.Default() {
		t.Error("a Context without an engine does not run on gemm.Default()")
	}
	e := gemm.New(dispatch.Reference(), 1)
	defer e.Close()
	if NewContext(context.Background(), e, false).Engine() != e {
		t.Error("a Context does not run on its engine")
	}
}

// noopChunk is a loop body that captures nothing: a call of ParallelFor
// with it allocates only what ParallelFor itself does.
func noopChunk(*gemm.Engine, int, int) error { return nil }

// TestParallelForOnCallerAllocatesNothing: a loop of a request that stays
// on the caller (a small model's steps run thousands a second) looks at
// its request without a heap allocation.
func TestParallelForOnCallerAllocatesNothing(t *testing.T) {
	e := gemm.New(dispatch.Default(), 2)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewContext(ctx, e, false)
	if n := testing.AllocsPerRun(100, func() {
		if err := c.ParallelFor(16, 16, noopChunk); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a loop on the caller: %v allocations, want 0", n)
	}
}
