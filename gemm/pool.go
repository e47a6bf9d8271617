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
// NewPoolSpin's), looking for the next,
// before it parks: the parallel loops of one model run follow each other
// within tens to hundreds of microseconds, and a parked worker handed
// work takes ~120 µs to run on a virtual machine (the idle vCPU must be
// woken), longer than most of them: the caller has done the work alone
// by then. The caller, done with its own share, likewise spins for the
// helpers' last chunks before it parks (joinSpin).
//
// Close stops the workers. A closed pool still runs every task it is
// given, on the goroutine that calls Run, one after another: an engine
// closed while products use it (or kept by a cache after its owner is
// done) returns the same results, only on one core.
type Pool struct {
	n       int
	spinFor time.Duration // how long a worker done with a task looks for the next
	tasks   chan func()
	quit    chan struct{} // closed by Close
	once    sync.Once
	workers sync.WaitGroup
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
	p := &Pool{n: n, spinFor: max(spin, 0), tasks: make(chan func(), n), quit: make(chan struct{})}
	p.workers.Add(n - 1)
	for i := 0; i < n-1; i++ {
		go p.work()
	}
	return p
}

// work runs tasks until the pool closes. Once it has, a worker takes at
// most the task it was already choosing, then leaves.
func (p *Pool) work() {
	defer p.workers.Done()
	for {
		select {
		case <-p.quit:
			return
		default:
		}
		if f := p.spin(); f != nil {
			f()
			continue
		}
		select {
		case f := <-p.tasks:
			f()
		case <-p.quit:
			return
		}
	}
}

// spin looks for a task for p.spinFor, yielding the core to other
// goroutines as it goes, and returns it, or nil.
func (p *Pool) spin() func() {
	if p.spinFor <= 0 {
		return nil
	}
	deadline := time.Now().Add(p.spinFor)
	for {
		select {
		case f := <-p.tasks:
			return f
		case <-p.quit:
			return nil
		default:
		}
		if time.Now().After(deadline) {
			return nil
		}
		runtime.Gosched()
	}
}

// Close stops the workers and waits for them to finish the tasks they are
// running; the tasks of a Run not yet taken by a worker then run on Run's
// caller. Close is idempotent and safe to call concurrently with Run, but
// not from inside a task of the same pool (it would wait for itself).
func (p *Pool) Close() {
	p.once.Do(func() { close(p.quit) })
	p.workers.Wait()
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
// on the caller, 1 to helpers on the helpers, which it may claim first. The caller does not wait for a
// worker to take a run: a run no worker has started when the caller's
// own is done never starts. A run that panics is recovered where it ran;
// share returns the first such panic as a *PanicError. After Close only
// the caller runs f.
func (p *Pool) share(helpers int, f func(part int)) error {
	var (
		// state counts the helpers' runs that started and have not
		// returned; closed is set once the caller's own run is done, after
		// which no run starts.
		state atomic.Int64
		errMu sync.Mutex
		first error
		// parked is closed by the last run to return once the caller has
		// stopped spinning for them and waits.
		parked chan struct{}
	)
	record := func(err error) {
		if err != nil {
			errMu.Lock()
			if first == nil {
				first = err
			}
			errMu.Unlock()
		}
	}
	if helpers > 0 {
		parked = make(chan struct{})
	}
	for i := 0; i < helpers; i++ {
		part := i + 1
		job := func() {
			for {
				s := state.Load()
				if s&shareClosed != 0 {
					return
				}
				if state.CompareAndSwap(s, s+1) {
					break
				}
			}
			record(protect(func() { f(part) }))
			if state.Add(-1) == shareClosed|shareWaiting {
				close(parked)
			}
		}
		select {
		case p.tasks <- job:
		default: // every worker busy and the queue full: the caller works alone
		}
	}
	record(protect(func() { f(0) }))
	if helpers == 0 {
		return first
	}
	if state.Or(shareClosed) != 0 {
		// A helper is still in its run: its last chunk, most often, which
		// ends in microseconds. Spin for it (a parked caller costs two
		// thread hand-offs), then park.
		deadline := time.Now().Add(joinSpin)
		for state.Load() != shareClosed {
			if time.Now().After(deadline) {
				if state.Or(shareWaiting)&^shareClosed != 0 {
					if joinParks != nil {
						joinParks()
					}
					<-parked
				}
				break
			}
			runtime.Gosched()
		}
	}
	errMu.Lock()
	defer errMu.Unlock()
	return first
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
	p.once.Do(func() { close(p.quit) })
	return p
}
