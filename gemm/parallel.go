package gemm

import (
	"sync/atomic"
)

// parallelGrain is the least work (multiply-adds, or units as costly) a
// chunk of Parallel holds, so that claiming a chunk (an atomic add, and
// whatever the caller's f does first) stays a small part of its cost.
const parallelGrain = 1 << 14

// Parallel runs f over the units [0, n) of a loop whose units are
// independent (each writes a part of the output of its own), in chunks
// of consecutive units, and returns the first error f returned. work is
// the whole loop's cost in multiply-adds (or units as costly): a chunk
// holds about parallelGrain of it, but no more than a quarter of a
// runner's share of the units.
//
// With one thread, fewer than two units per thread, or less work than a
// product splits across cores for, the chunks run in order on the
// caller, and f is given e: products inside a chunk split over e's
// workers on their own. Otherwise the caller and e's other workers claim
// chunks one after another until none is left, and f is given
// e.Serial(): products inside a chunk stay on the goroutine running it,
// so no run waits on e's workers from one of them. f must run its
// products on the engine it is given, never on e itself.
//
// Once a chunk has returned an error no further chunk starts. A panic in
// f is recovered where it ran and returned as a *PanicError.
func (e *Engine) Parallel(n, work int, f func(e *Engine, u0, u1 int) error) error {
	if n <= 0 {
		return nil
	}
	e.note(n, work)
	threads := e.pool.Size()
	parts := threads
	if threads <= 1 || n < 2*threads || work < MinParallelWork {
		parts = 1
	}
	chunk := 1
	if work > 0 {
		chunk = int(min((int64(parallelGrain)*int64(n)+int64(work)-1)/int64(work), int64(n)))
	}
	chunk = max(1, min(chunk, n/(4*parts)))
	if parts == 1 {
		for u := 0; u < n; u += chunk {
			var err error
			if perr := protect(func() { err = f(e, u, min(u+chunk, n)) }); perr != nil {
				return perr
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	serial := e.Serial()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	claim := func() {
		for failed.Load() == nil {
			u0 := int(next.Add(int64(chunk))) - chunk
			if u0 >= n {
				return
			}
			if err := f(serial, u0, min(u0+chunk, n)); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	}
	if err := e.pool.share(parts-1, claim); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Serial returns an engine on e's table that runs every product on the
// goroutine calling it, made once per engine: work already split across
// cores (the chunks of Parallel) multiplies on it, so its products do not
// split again. It has no workers of its own: it needs no Close, and it
// runs as before once e is closed. An engine of one thread is its own
// Serial.
func (e *Engine) Serial() *Engine {
	if e.pool.Size() <= 1 {
		return e
	}
	e.serialOnce.Do(func() {
		e.serial = &Engine{t: e.t, pool: serialPool(), kcBytes: e.kcBytes}
	})
	return e.serial
}
