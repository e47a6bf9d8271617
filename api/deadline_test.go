package api

import (
	"context"
	"errors"
	"testing"
	"time"
)

type deadlineKey struct{}

// TestDeadlineCtx: a work request's context ends as context.WithDeadline
// would (its deadline, its cancel, its parent), whether or not anything
// waits on Done, and keeps its parent's values.
func TestDeadlineCtx(t *testing.T) {
	parent := context.WithValue(context.Background(), deadlineKey{}, "v")
	far := time.Now().Add(time.Hour)

	t.Run("polled", func(t *testing.T) {
		c := withDeadline(parent, far)
		cancel := c.cancel
		defer cancel()
		if err := c.Err(); err != nil {
			t.Fatalf("Err before the deadline: %v", err)
		}
		if d, ok := c.Deadline(); !ok || !d.Equal(far) {
			t.Errorf("Deadline %v %v, want %v", d, ok, far)
		}
		if v := c.Value(deadlineKey{}); v != "v" {
			t.Errorf("Value %v, want the parent's", v)
		}
		if c.set.Load() {
			t.Error("polling made a timer")
		}
		past := withDeadline(parent, time.Now().Add(-time.Millisecond))
		cancelPast := past.cancel
		defer cancelPast()
		if err := past.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err past the deadline: %v", err)
		}
		cancelPast()
		if err := past.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err past the deadline, then canceled: %v, want the deadline's", err)
		}
	})

	t.Run("deadline ends Done", func(t *testing.T) {
		c := withDeadline(parent, time.Now().Add(20*time.Millisecond))
		cancel := c.cancel
		defer cancel()
		<-c.Done()
		if err := c.Err(); err != context.DeadlineExceeded {
			t.Errorf("Err once Done: %v", err)
		}
		if v := c.Value(deadlineKey{}); v != "v" {
			t.Errorf("Value %v, want the parent's", v)
		}
		if cause := context.Cause(c); cause != context.DeadlineExceeded {
			t.Errorf("Cause %v", cause)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		for _, waitFirst := range []bool{false, true} {
			c := withDeadline(parent, far)
			cancel := c.cancel
			if waitFirst {
				c.Done()
			}
			cancel()
			cancel() // twice is harmless
			if err := c.Err(); err != context.Canceled {
				t.Errorf("wait first %v: Err after cancel: %v", waitFirst, err)
			}
			select {
			case <-c.Done():
			default:
				t.Errorf("wait first %v: Done not closed after cancel", waitFirst)
			}
			if err := c.Err(); err != context.Canceled {
				t.Errorf("wait first %v: Err once Done: %v", waitFirst, err)
			}
		}
	})

	t.Run("parent", func(t *testing.T) {
		p, stop := context.WithCancelCause(parent)
		c := withDeadline(p, far)
		cancel := c.cancel
		defer cancel()
		why := errors.New("the client left")
		stop(why)
		if err := c.Err(); err != context.Canceled {
			t.Errorf("Err after the parent ended: %v", err)
		}
		<-c.Done()
		if cause := context.Cause(c); cause != why {
			t.Errorf("Cause %v, want the parent's", cause)
		}
		near, cancelNear := context.WithDeadline(parent, time.Now().Add(time.Minute))
		defer cancelNear()
		c2 := withDeadline(near, far)
		cancel2 := c2.cancel
		defer cancel2()
		if d, _ := c2.Deadline(); d.After(time.Now().Add(time.Minute)) {
			t.Errorf("Deadline %v: later than the parent's", d)
		}
	})

	t.Run("derived", func(t *testing.T) {
		// A context derived with its own cancellation ends with c.
		c := withDeadline(parent, far)
		cancel := c.cancel
		child, stop := context.WithCancel(c)
		defer stop()
		if err := child.Err(); err != nil {
			t.Fatalf("child Err: %v", err)
		}
		cancel()
		<-child.Done()
		if err := child.Err(); err != context.Canceled {
			t.Errorf("child Err after cancel: %v", err)
		}
		ran := make(chan struct{})
		context.AfterFunc(c, func() { close(ran) })
		<-ran
	})
}

// TestDeadlineCtxServes: an inference past --request-timeout is answered
// 504 on a real server, with the deadline polled (no dynamic batching).
func TestDeadlineCtxServes(t *testing.T) {
	url := newTestHTTPServer(t, Options{Repository: mnistRepo(), RequestTimeout: time.Nanosecond, IOTimeout: time.Minute, Logger: quietLog()})
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784)))
	if r.status != 504 {
		t.Fatalf("infer past its deadline: %d %s, want 504", r.status, r.body)
	}
	url = newTestHTTPServer(t, Options{Repository: mnistRepo(), Logger: quietLog()})
	if r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))); r.status != 200 {
		t.Fatalf("infer: %d %s", r.status, r.body)
	}
}
