package ops

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTickLooksOnceDue: under an ended request Tick reports nothing
// until TickEvery units have gathered, then the request's error; the
// count starts again after each look.
func TestTickLooksOnceDue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := NewContext(ctx, nil, false)
	for range 3 {
		for done := 1; done < TickEvery; done++ {
			if err := c.Tick(1); err != nil {
				t.Fatalf("after %d units: %v, want nil before %d", done, err, TickEvery)
			}
		}
		if err := c.Tick(1); !errors.Is(err, context.Canceled) {
			t.Fatalf("after %d units: %v, want %v", TickEvery, err, context.Canceled)
		}
	}
	if err := c.Tick(TickEvery - 1); err != nil {
		t.Fatalf("after %d units: %v, want nil", TickEvery-1, err)
	}
	if err := c.Tick(7); !errors.Is(err, context.Canceled) {
		t.Fatalf("after %d units: %v, want %v", TickEvery+6, err, context.Canceled)
	}
	// A call counts at least one unit.
	for i := 1; i < TickEvery; i++ {
		if err := c.Tick(0); err != nil {
			t.Fatalf("after %d empty calls: %v", i, err)
		}
	}
	if err := c.Tick(0); !errors.Is(err, context.Canceled) {
		t.Fatalf("after %d empty calls: %v, want %v", TickEvery, err, context.Canceled)
	}
	// A call of TickEvery units or more is due at once.
	if err := c.Tick(TickEvery); !errors.Is(err, context.Canceled) {
		t.Errorf("Tick(TickEvery): %v, want %v", err, context.Canceled)
	}
	if err := c.Tick(1 << 40); !errors.Is(err, context.Canceled) {
		t.Errorf("Tick(1<<40): %v, want %v", err, context.Canceled)
	}
}

// TestTickReportsTheDeadline: a request past its deadline reports
// context.DeadlineExceeded once due; a live one never stops.
func TestTickReportsTheDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	if err := NewContext(ctx, nil, false).Tick(TickEvery); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past its deadline: %v, want %v", err, context.DeadlineExceeded)
	}
	live := NewContext(context.Background(), nil, false)
	for i := 0; i < 4*TickEvery; i += 1000 {
		if err := live.Tick(1000); err != nil {
			t.Fatalf("a live request: %v", err)
		}
	}
}

// TestTickWithoutARequest: a nil Context and the zero Context never stop.
func TestTickWithoutARequest(t *testing.T) {
	var none *Context
	var zero Context
	for range 3 {
		if err := none.Tick(TickEvery); err != nil {
			t.Errorf("nil Context: %v", err)
		}
		if err := zero.Tick(TickEvery); err != nil {
			t.Errorf("zero Context: %v", err)
		}
	}
}

// TestTickCountsPerContext: a Context made for a subgraph (WithContext)
// looks at its own request.
func TestTickCountsPerContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	outer := NewContext(context.Background(), nil, false)
	inner := outer.WithContext(ctx)
	if err := inner.Tick(TickEvery); !errors.Is(err, context.Canceled) {
		t.Errorf("subgraph under an ended request: %v, want %v", err, context.Canceled)
	}
	if err := outer.Tick(TickEvery); err != nil {
		t.Errorf("outer run under a live request: %v", err)
	}
}

// TestInPieces: the pieces cover [0, n) in order, none longer than
// TickEvery, and a cancelled request stops the walk at its first piece.
func TestInPieces(t *testing.T) {
	n := 2*TickEvery + 5
	next := 0
	err := NewContext(context.Background(), nil, false).InPieces(n, func(lo, hi int) {
		if lo != next || hi <= lo || hi-lo > TickEvery {
			t.Errorf("piece [%d, %d) after %d", lo, hi, next)
		}
		next = hi
	})
	if err != nil || next != n {
		t.Errorf("InPieces = %v, covered [0, %d), want [0, %d)", err, next, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := NewContext(ctx, nil, false).InPieces(n, func(int, int) { calls++ }); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("cancelled: %v after %d pieces, want the context's error before any", err, calls)
	}
}
