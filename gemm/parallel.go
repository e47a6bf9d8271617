package gemm

import (
	"context"
	"sync"
	"sync/atomic"
)

// parallelGrain is the least work (multiply-adds, or units as costly) a
// chunk of Parallel holds, so that claiming a chunk (an atomic add, and
// whatever the caller's f does first) stays a small part of its cost.
const parallelGrain = 1 << 14

// serialGrain is the work of a chunk of a loop that runs on the caller
// alone: the loop looks at its request (ops.Context.ParallelFor) between
// chunks, about every 20 µs, and pays a call for each.
const serialGrain = 1 << 20

// Parallel runs f over the units [0, n) of a loop whose units are
// independent (each writes a part of the output of its own), in chunks
// of consecutive units, and returns the first error f returned. work is
// the whole loop's cost in multiply-adds (or units as costly): a chunk
// split across cores holds about parallelGrain of it, but no more than a
// quarter of a runner's share of the units; one on the caller alone
// about serialGrain, but no more than a quarter of the units.
//
// The loop splits over as many cores as have two units each and
// minPartWork of its work each (Engine.parts), at most e's threads. With
// one thread, fewer than four units, or less work than a product splits
// across cores for, the chunks run in order on the caller, and f is given e: products inside a chunk split over e's
// workers on their own. Otherwise the caller and e's other workers claim
// chunks one after another until none is left, and f is given
// e.Serial(): products inside a chunk stay on the goroutine running it,
// so no run waits on e's workers from one of them. f must run its
// products on the engine it is given, never on e itself.
//
// Once a chunk has returned an error no further chunk starts. A panic in
// f is recovered where it ran and returned as a *PanicError.
func (e *Engine) Parallel(n, work int, f func(e *Engine, u0, u1 int) error) error {
	return e.ParallelContext(nil, n, work, f)
}

// ParallelContext is Parallel that looks at ctx (nil: none) before each
// chunk: once it is done no further chunk starts, and the loop returns
// ctx's error (a request's loops stop with the request). The look is
// Parallel's own, where a wrapper of f was a heap allocation a loop.
func (e *Engine) ParallelContext(ctx context.Context, n, work int, f func(e *Engine, u0, u1 int) error) error {
	if n <= 0 {
		return nil
	}
	defer e.noted(e.note(n/2, work))
	parts := e.parts(work, n/2)
	if parts == 1 {
		chunk := max(1, min(unitsOf(serialGrain, n, work), n/4))
		var err error
		perr := protect(func() {
			for u := 0; u < n && err == nil; u += chunk {
				if err = ctxErr(ctx); err == nil {
					err = f(e, u, min(u+chunk, n))
				}
			}
		})
		if perr != nil {
			return perr
		}
		return err
	}
	chunk := max(1, min(unitsOf(parallelGrain, n, work), n/(4*parts)))
	l := loops.Get().(*loop)
	l.start(n, chunk, parts)
	l.ctx, l.pf, l.serial = ctx, f, e.Serial()
	err := e.pool.share(parts-1, l.claim)
	var ferr error
	if p := l.failed.Load(); p != nil {
		ferr = *p
	}
	l.free()
	if err != nil {
		return err
	}
	return ferr
}

// loop is one loop split across cores (Parallel's, or a product's in
// run): its claims, what runs each chunk, and its first error, with the
// method values share and the claims run, bound once. Pooled: a loop's
// state and closures were four heap objects a split, and a model at
// batch 1 splits dozens of loops a run. Once share has returned no run
// of the loop is left (share waits for every run that started, and none
// starts after the caller's own has ended), so the loop is free for the
// next.
type loop struct {
	claims
	f      func(u0, u1 int)                  // run's f; nil: Parallel's pf
	pf     func(e *Engine, u0, u1 int) error // Parallel's f
	ctx    context.Context
	serial *Engine // what pf is given
	failed atomic.Pointer[error]

	claim func(part int)        // share's f: the claims of part, chunk by chunk
	chunk func(u0, u1 int) bool // l.runChunk
}

var loops = sync.Pool{New: func() any {
	l := new(loop)
	l.claim, l.chunk = l.runPart, l.runChunk
	return l
}}

// start readies l's claims for n units in chunks of chunk split over
// parts runs, with no error yet.
func (l *loop) start(n, chunk, parts int) {
	l.claims.reset(n, chunk, parts)
	l.failed.Store(nil)
}

// free gives l back to the pool, holding no operands.
func (l *loop) free() {
	l.f, l.pf, l.ctx, l.serial = nil, nil, nil, nil
	loops.Put(l)
}

// runPart runs the chunks run part claims.
func (l *loop) runPart(part int) { l.run(part, l.chunk) }

// runChunk runs units [u0, u1): run's f, or Parallel's unless the loop
// has failed or its context is done; it reports whether to go on.
func (l *loop) runChunk(u0, u1 int) bool {
	if l.f != nil {
		l.f(u0, u1)
		return true
	}
	if l.failed.Load() != nil {
		return false
	}
	if err := ctxErr(l.ctx); err != nil {
		fail(&l.failed, err)
		return false
	}
	if err := l.pf(l.serial, u0, u1); err != nil {
		fail(&l.failed, err)
		return false
	}
	return true
}

// minPartWork is the least work a core is given when work splits: half
// of MinParallelWork, so work splits once it is worth two cores, and a
// loop or product on a server of many cores wakes only as many as its
// work keeps busy for longer than a fork and join costs.
const minPartWork = MinParallelWork / 2

// parts returns how many cores work (in multiply-adds, or units as
// costly) splits over when it has at least two of its units for each:
// one for less than MinParallelWork, else one for each minPartWork of it,
// at most e's threads and maxParts.
func (e *Engine) parts(work, maxParts int) int {
	threads := e.pool.Size()
	if threads <= 1 || work < MinParallelWork {
		return 1
	}
	return max(1, min(threads, maxParts, work/minPartWork))
}

// claims hands out the chunks of a loop of n units split over parts
// runs: run p claims the chunks of its own contiguous part of the units
// first, then helps with the others' from their fronts, a chunk at a
// time. Consecutive loops split alike give each core the same part of
// each (the same rows of an image, layer after layer), so a core reads
// what its own caches hold instead of lines the other core just wrote;
// a run that starts late, or a core busy elsewhere, still leaves no part
// waiting: the others take it over.
type claims struct {
	chunk int
	parts []claimPart
}

// claimPart is one part's next unclaimed unit and its end, alone on its
// cache line: the runs claiming from neighbouring parts do not contend.
type claimPart struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

// reset readies c for n units in chunks of chunk split over parts runs.
func (c *claims) reset(n, chunk, parts int) {
	c.chunk = chunk
	if cap(c.parts) < parts {
		c.parts = make([]claimPart, parts)
	}
	c.parts = c.parts[:parts]
	for i := range c.parts {
		u0, u1 := span(i, n, parts)
		c.parts[i].next.Store(int64(u0))
		c.parts[i].end = int64(u1)
	}
}

// run runs f on the chunks run part claims, its own part's first, until
// none is left or f returns false.
func (c *claims) run(part int, f func(u0, u1 int) bool) {
	n := len(c.parts)
	for i := range n {
		p := &c.parts[(part+i)%n]
		for {
			u0 := p.next.Add(int64(c.chunk)) - int64(c.chunk)
			if u0 >= p.end {
				break
			}
			if !f(int(u0), int(min(u0+int64(c.chunk), p.end))) {
				return
			}
		}
	}
}

// unitsOf returns how many of a loop's n units, of work in all, hold about
// grain of it (at least one, at most n).
func unitsOf(grain, n, work int) int {
	if work <= 0 {
		return 1
	}
	return int(max(1, min((int64(grain)*int64(n)+int64(work)-1)/int64(work), int64(n))))
}

// ctxErr is ctx's error, nil for a nil ctx.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// fail records a chunk's error as the loop's first, if none is yet. (Taken
// out of the claim loop, the error escapes to the heap only when there is
// one: in the loop it was allocated for every chunk.)
func fail(failed *atomic.Pointer[error], err error) {
	failed.CompareAndSwap(nil, &err)
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
