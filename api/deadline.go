package api

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is the context a work request runs in (admit): its
// parent's values and cancellation, and the --request-timeout deadline.
// context.WithTimeout would arm a timer and join the parent's children for
// every request; yet the serving path only polls Err (the model between
// steps, operators as they tick), which here compares the clock with the
// deadline. The timer-backed context is made the first time something
// waits: Done (the dynamic batcher, a model's instance slots) or a context
// derived with its own cancellation (AfterFunc). From then on it answers
// Err and Value too, so Err is non-nil exactly when Done is closed and
// context.Cause names the deadline (before, Cause is the parent's).
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	canceled atomic.Bool // set by cancel

	mu   sync.Mutex
	real context.Context // made by wait
	stop context.CancelFunc
	set  atomic.Bool // real is made
}

// withDeadline returns a context with deadline d and its parent's values
// and cancellation; its cancel method cancels it.
func withDeadline(parent context.Context, d time.Time) *deadlineCtx {
	return &deadlineCtx{parent: parent, deadline: d}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Value is the parent's values, and once the timer-backed context is made
// its own too, so that a context derived with its own cancellation finds
// it (as context.Cause does).
func (c *deadlineCtx) Value(key any) any {
	if c.set.Load() {
		return c.real.Value(key)
	}
	return c.parent.Value(key)
}

func (c *deadlineCtx) Err() error {
	if c.set.Load() {
		return c.real.Err()
	}
	if c.canceled.Load() {
		return context.Canceled
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.wait().Done() }

// AfterFunc lets a context derived from c with its own cancellation
// (context.WithCancel) join c's list instead of starting a goroutine that
// waits on Done.
func (c *deadlineCtx) AfterFunc(f func()) func() bool { return context.AfterFunc(c.wait(), f) }

// wait returns the timer-backed context, making it the first time: it
// ends when the parent does, at the deadline, or at once when c was
// canceled already.
func (c *deadlineCtx) wait() context.Context {
	if c.set.Load() {
		return c.real
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set.Load() {
		c.real, c.stop = context.WithDeadline(c.parent, c.deadline)
		if c.canceled.Load() {
			c.stop()
		}
		c.set.Store(true)
	}
	return c.real
}

// cancel cancels c: Err reports context.Canceled from here on, unless the
// deadline or the parent ended it first. It may be called more than once.
func (c *deadlineCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set.Load() {
		c.stop()
		return
	}
	if c.Err() == nil {
		c.canceled.Store(true)
	}
}
