package gemm

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// PanicError is a panic recovered from a product's task: a broken
// invariant inside gemm or a kernel, reported to the caller as an error
// instead of crashing the process.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("gemm: internal error: %v\n%s", e.Value, e.Stack)
}

// Pool runs tasks on the goroutine that asks and a fixed number of worker
// goroutines, so products split across cores never oversubscribe the CPU,
// however many requests run at once.
//
// A pool of n has n-1 workers: the caller is the n-th. Work is claimed
// from a shared counter, by the caller first and by the workers that are
// free to help: a caller never waits for a worker busy with another
// request's work (it does the work itself), and a worker that starts late
// finds the work done and returns at once. A worker done with a task
// spins (yielding to other goroutines) for a while (DefaultSpin, or
// NewPoolSpin's), watching its own slot for the next, before it parks:
// the parallel loops of one model run follow each other within tens to
// hundreds of microseconds, and a parked worker handed work takes ~120 µs
// to run on a virtual machine (the idle vCPU must be woken), longer than
// most of them: the caller has done the work alone by then. The caller,
// done with its own share, likewise spins for the helpers' last chunks
// before it parks (joinSpin).
//
// A task reaches a spinning worker through the worker's slot, a cache
// line the caller writes and the worker watches. A channel's hand-off
// moved its lock, count and buffer across cores, each line ~0.13 µs on a
// virtual Xeon: a share's round trip took 1.37 µs there, 0.78 through the
// slot (BenchmarkShare). Meanwhile the caller, done with its own part,
// had begun the worker's, pulling the lines the worker's core held from
// the loop before.
//
// Close stops the workers. A closed pool still runs every task it is
// given, on the goroutine that calls Run, one after another: an engine
// closed while products use it (or kept by a cache after its owner is
// done) returns the same results, only on one core.
type Pool struct {
	n       int
	spinFor time.Duration // how long a worker done with a task looks for the next
	workers []*worker
	quit    chan struct{} // closed by Close
	closed  atomic.Bool   // set by Close, for the spinning workers
	once    sync.Once
	running sync.WaitGroup
}

// worker is one worker goroutine's slot: the run handed to it (nil while
// it is free; it clears it when the run returns) and its parking state,
// alone on its cache lines.
type worker struct {
	_      [64]byte
	run    atomic.Pointer[shareRun]
	parked atomic.Bool
	wake   chan struct{} // one token: wakes the worker once parked
	_      [64]byte
}

// DefaultSpin is how long a worker looks for its next task before it
// parks: longer than the gaps between one model run's parallel loops.
// With 50 µs the worker of two threads parked ~6 times in each run of the
// int8 encoder and two threads were slower than one; with 500 µs it never
// parks in a run (1.38x one thread), and 1 or 2 ms gain nothing more.
// The spin yields the core to any other goroutine, but the OS counts it
// as busy: a host shared with other work may prefer less (NewPoolSpin).
const DefaultSpin = 500 * time.Microsecond

// NewPool returns a pool of parallelism n (n >= 1): n-1 workers, which
// run until Close, and the caller of each Run. Its workers spin for
// DefaultSpin after each task.
func NewPool(n int) *Pool { return NewPoolSpin(n, DefaultSpin) }

// NewPoolSpin is NewPool with workers that look for their next task for
// spin (0: they park at once) before they park.
func NewPoolSpin(n int, spin time.Duration) *Pool {
	n = max(n, 1)
	p := &Pool{n: n, spinFor: max(spin, 0), workers: make([]*worker, n-1), quit: make(chan struct{})}
	p.running.Add(n - 1)
	for i := range p.workers {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers[i] = w
		go p.work(w)
	}
	return p
}

// work runs the runs handed to w until the pool closes. Once it has, a
// worker finishes the run it was in, then leaves.
func (p *Pool) work(w *worker) {
	defer p.running.Done()
	for {
		r := p.next(w)
		if r == nil {
			return
		}
		r.help()
		w.run.Store(nil)
	}
}

// spinChecks is how many looks at its slot a spinning worker takes
// between looks at the clock and yields of its core (~0.1 µs).
const spinChecks = 64

// next returns the next run handed to w, spinning for p.spinFor, then
// parked; nil once the pool has closed.
func (p *Pool) next(w *worker) *shareRun {
	if p.spinFor > 0 {
		deadline := Clock() + p.spinFor
		for i := 1; ; i++ {
			if r := w.run.Load(); r != nil {
				return r
			}
			if i%spinChecks == 0 {
				if p.closed.Load() {
					return nil
				}
				if Clock() > deadline {
					break
				}
				runtime.Gosched()
			}
		}
	}
	for {
		// Parked is set before the slot's last look, and a caller sets the
		// slot before it looks at parked: one of them sees the other.
		w.parked.Store(true)
		if r := w.run.Load(); r != nil {
			w.parked.Store(false)
			return r
		}
		select {
		case <-w.wake:
		case <-p.quit:
			w.parked.Store(false)
			return nil
		}
		w.parked.Store(false)
		if r := w.run.Load(); r != nil {
			return r
		}
	}
}

// Close stops the workers and waits for them to finish the tasks they are
// running; the tasks of a Run not yet taken by a worker then run on Run's
// caller. Close is idempotent and safe to call concurrently with Run, but
// not from inside a task of the same pool (it would wait for itself).
func (p *Pool) Close() {
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.quit)
	})
	p.running.Wait()
}

// Size returns the pool's parallelism (its workers and the caller): what
// Run had before Close, which callers use to split their work.
func (p *Pool) Size() int { return p.n }

// Run runs every task and returns when all have finished: the caller
// and the workers free to help claim them one by one. A task that panics
// is recovered where it ran; Run returns the first such panic as a
// *PanicError (the other tasks still run to their end). After Close, the
// tasks run on the caller, in order.
func (p *Pool) Run(tasks []func()) error {
	errs := make([]error, len(tasks))
	var next atomic.Int64
	claim := func(int) {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(tasks) {
				return
			}
			errs[i] = protect(tasks[i])
		}
	}
	if err := p.share(min(p.n, len(tasks))-1, claim); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// share runs f on the caller and on up to helpers of the pool's workers
// that are free to help, and returns when every run that started has
// returned: f is a loop that claims its own work, so however many runs
// start, each part of the work runs once. f is given its run's part: 0
// on the caller, 1 to helpers on the helpers, which it may claim first.
// The caller does not wait for a worker to take a run: a run no worker
// has started when the caller's own is done never starts. A run that
// panics is recovered where it ran; share returns the first such panic
// as a *PanicError. After Close only the caller runs f.
func (p *Pool) share(helpers int, f func(part int)) error {
	if helpers <= 0 || p.closed.Load() {
		return protect(func() { f(0) })
	}
	s := &shareState{f: f}
	runs := s.inline[:0]
	if helpers > len(s.inline) {
		runs = make([]shareRun, 0, helpers)
	}
	handed := 0
	for _, w := range p.workers {
		if handed == helpers {
			break
		}
		runs = append(runs, shareRun{s: s, part: handed + 1})
		r := &runs[handed]
		if w.run.Load() != nil || !w.run.CompareAndSwap(nil, r) {
			runs = runs[:handed]
			continue // busy with another run: the caller works without it
		}
		handed++
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default: // a token is already there
			}
		}
	}
	s.record(protect(func() { f(0) }))
	if handed == 0 {
		return s.first
	}
	if s.state.Or(shareClosed) != 0 {
		// A helper is still in its run: its last chunk, most often, which
		// ends in microseconds. Spin for it (a parked caller costs two
		// thread hand-offs), then park.
		deadline := Clock() + joinSpin
		for s.state.Load() != shareClosed {
			if Clock() > deadline { // a reading costs the join's notice of the helper's end
				s.parked = make(chan struct{})
				if s.state.Or(shareWaiting)&^shareClosed != 0 {
					if joinParks != nil {
						joinParks()
					}
					<-s.parked
				}
				break
			}
			runtime.Gosched()
		}
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.first
}

// shareState is one share: its f, the count of helpers' runs that started
// and have not returned (with the flags shareClosed, set once the
// caller's own run is done, after which no run starts, and shareWaiting),
// and the first panic. A share of up to three helpers is this one
// allocation.
type shareState struct {
	f     func(part int)
	state atomic.Int64
	errMu sync.Mutex
	first error
	// parked is made by the caller once it has stopped spinning for the
	// helpers and waits (before it sets shareWaiting), and closed by the
	// last run to return.
	parked chan struct{}
	inline [3]shareRun // the runs handed out, when they fit
}

// shareRun is one helper's run of a share: its part.
type shareRun struct {
	s    *shareState
	part int
}

// help runs r's part of its share on a worker, unless the caller's own
// run has already ended.
func (r *shareRun) help() {
	s := r.s
	for {
		st := s.state.Load()
		if st&shareClosed != 0 {
			return
		}
		if s.state.CompareAndSwap(st, st+1) {
			break
		}
	}
	s.record(protect(func() { s.f(r.part) }))
	if s.state.Add(-1) == shareClosed|shareWaiting {
		close(s.parked)
	}
}

func (s *shareState) record(err error) {
	if err != nil {
		s.errMu.Lock()
		if s.first == nil {
			s.first = err
		}
		s.errMu.Unlock()
	}
}

// The flags of share's state, above its count of running helpers.
const (
	shareClosed  = 1 << 62
	shareWaiting = 1 << 61
)

// joinSpin is how long the caller of share spins for helpers still
// running before it parks.
const joinSpin = 50 * time.Microsecond

// joinParks, when set (by tests), is called as share's caller parks to
// wait for a helper.
var joinParks func()

// protect runs f, returning a panic as a *PanicError.
func protect(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// serialPool returns a pool of one and no workers: Run runs every task
// on its caller, and Close has nothing to stop.
func serialPool() *Pool {
	p := &Pool{n: 1, quit: make(chan struct{})}
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.quit)
	})
	return p
}
