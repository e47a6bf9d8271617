package ops

import (
	"context"
	"fmt"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// A Budget is the memory a run may hold for the values its nodes make: a
// request's share of the server's memory budget, or the cap on what a
// load folds. Grow takes n bytes or refuses with an error that says why
// (the executor adds the node and the size); Shrink gives n back. A
// Budget must be safe for concurrent use.
type Budget interface {
	Grow(n int64) error
	Shrink(n int64)
}

type budgetKey struct{}

// WithBudget returns a context whose runs charge the values they make to
// b.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetOf returns the budget runs under ctx charge, nil for none.
func BudgetOf(ctx context.Context) Budget {
	if ctx == nil {
		return nil
	}
	b, _ := ctx.Value(budgetKey{}).(Budget)
	return b
}

// MemoryError is a node's need for memory its run's budget refused.
type MemoryError struct {
	Bytes int64 // what the node asked for
	Err   error // the budget's refusal
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("its outputs need %s: %v", FormatBytes(e.Bytes), e.Err)
}

func (e *MemoryError) Unwrap() error { return e.Err }

// FormatBytes renders n bytes for a reader: "512 B", "64 MiB", "8.0 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := "KMGTPE"[exp : exp+1]
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %siB", v, suffix)
	}
	return fmt.Sprintf("%.1f %siB", v, suffix)
}

// Meter is one graph run's account with its Budget: what each step
// reserves before it allocates (Context.Reserve), settled against the
// outputs it made, and the values the run holds, given back as they die
// and all of it when the run ends. A nil Meter (a run without a budget)
// charges nothing.
type Meter struct {
	b    Budget
	step int64 // reserved by the running step
	held int64 // settled: values the run holds
}

// NewMeter returns a meter charging b, nil when b is nil.
func NewMeter(b Budget) *Meter {
	if b == nil {
		return nil
	}
	return &Meter{b: b}
}

// reserve takes n bytes for the running step.
func (m *Meter) reserve(n int64) error {
	if m == nil || n <= 0 {
		return nil
	}
	if err := m.b.Grow(n); err != nil {
		return &MemoryError{Bytes: n, Err: err}
	}
	m.step += n
	return nil
}

// Settle ends a step whose outputs hold made bytes of fresh memory: the
// run holds them from here, in place of what the step reserved. A step
// that failed settles 0.
func (m *Meter) Settle(made int64) error {
	if m == nil {
		return nil
	}
	reserved := m.step
	m.step = 0
	switch {
	case made < reserved:
		m.b.Shrink(reserved - made)
	case made > reserved:
		if err := m.b.Grow(made - reserved); err != nil {
			m.b.Shrink(reserved)
			return &MemoryError{Bytes: made, Err: err}
		}
	}
	m.held += made
	return nil
}

// Release gives back n bytes of a value that died.
func (m *Meter) Release(n int64) {
	if m == nil || n <= 0 {
		return
	}
	n = min(n, m.held)
	m.held -= n
	m.b.Shrink(n)
}

// Close gives back everything the run still holds.
func (m *Meter) Close() {
	if m == nil {
		return
	}
	m.b.Shrink(m.held + m.step)
	m.held, m.step = 0, 0
}

// Reserve asks the run's budget for n bytes before the operator
// allocates them: an operator whose outputs' size follows from its input
// values or shapes (ConstantOfShape, Expand, Tile, a broadcast, a
// product) calls it once it knows the size, so a small request cannot
// make it allocate without bound. The step holds the reservation until
// it ends; its outputs are then charged in its place.
func (c *Context) Reserve(n int64) error {
	if c == nil {
		return nil
	}
	return c.meter.reserve(n)
}

// ReserveTensor reserves the bytes of a tensor of type dt and shape
// before it is made; a shape beyond tensor.MaxElements is an input error.
func (c *Context) ReserveTensor(dt tensor.DataType, shape []int) error {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return InputErrorf("%v", err)
	}
	return c.Reserve(int64(n) * elemBytes(dt))
}

// Metered returns a Context like c whose operators reserve from m.
func (c *Context) Metered(m *Meter) *Context {
	d := *c
	d.meter = m
	return &d
}

// SizeOf returns the bytes of a tensor's elements (strings count 16
// bytes each: their headers).
func SizeOf(t *tensor.Tensor) int64 {
	if t == nil {
		return 0
	}
	return int64(t.Len()) * elemBytes(t.DType)
}

// elemBytes is the memory one element of dt holds: a string's header for
// BYTES (its characters are not counted).
func elemBytes(dt tensor.DataType) int64 {
	if s := dt.Size(); s > 0 {
		return int64(s)
	}
	return 16
}
