package ops

import (
	"context"
	"errors"
	"testing"
)

type testBudget struct{ limit, used int64 }

var errTestBudget = errors.New("refused")

func (b *testBudget) Grow(n int64) error {
	if b.used+n > b.limit {
		return errTestBudget
	}
	b.used += n
	return nil
}

func (b *testBudget) Shrink(n int64) {
	if n > b.used {
		panic("shrink past what is held")
	}
	b.used -= n
}

// TestMeterBalances: reservations become the step's outputs, values die
// one by one, a refusal leaves nothing taken, and Close gives back the
// rest.
func TestMeterBalances(t *testing.T) {
	b := &testBudget{limit: 1000}
	ctx := WithBudget(context.Background(), b)
	m := NewMeter(BudgetOf(ctx))
	c := NewContext(ctx, nil, false).Metered(m)

	if err := c.Reserve(600); err != nil || b.used != 600 {
		t.Fatalf("reserve: %v, used %d", err, b.used)
	}
	err := c.Reserve(500)
	var me *MemoryError
	if !errors.As(err, &me) || me.Bytes != 500 || !errors.Is(err, errTestBudget) || b.used != 600 {
		t.Fatalf("over the limit: %v, used %d", err, b.used)
	}
	if err := m.Settle(400); err != nil || b.used != 400 { // outputs smaller than reserved
		t.Fatalf("settle 400: %v, used %d", err, b.used)
	}
	if err := m.Settle(300); err != nil || b.used != 700 { // nothing reserved: charged once made
		t.Fatalf("settle 300: %v, used %d", err, b.used)
	}
	if err := c.Reserve(100); err != nil {
		t.Fatal(err)
	}
	if err := m.Settle(500); !errors.As(err, &me) || me.Bytes != 500 || b.used != 700 { // 400 more than reserved: refused, reservation given back
		t.Fatalf("settle past the limit: %v, used %d", err, b.used)
	}
	m.Release(300)
	if b.used != 400 {
		t.Fatalf("after a release: used %d", b.used)
	}
	m.Close()
	if b.used != 0 {
		t.Fatalf("after Close: used %d", b.used)
	}

	// Without a budget nothing is charged and nothing fails.
	var none *Meter
	nc := NewContext(context.Background(), nil, false).Metered(NewMeter(nil))
	if err := nc.Reserve(1 << 60); err != nil || none.Settle(1<<60) != nil {
		t.Fatal("a run without a budget refused")
	}
	none.Release(1)
	none.Close()
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		512: "512 B", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 46340 * 46340 * 4: "8.0 GiB", 3 << 40: "3 TiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
