package gemm

import (
	"fmt"
	"runtime/debug"
	"sync"
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

// Pool runs tasks on a fixed number of worker goroutines, so products
// split across cores never oversubscribe the CPU, however many requests
// run at once.
//
// Close stops the workers. A closed pool still runs every task it is
// given, on the goroutine that calls Run, one after another: an engine
// closed while products use it (or kept by a cache after its owner is
// done) returns the same results, only on one core.
type Pool struct {
	n       int
	tasks   chan func()
	quit    chan struct{} // closed by Close
	once    sync.Once
	workers sync.WaitGroup
}

// NewPool starts n workers (n >= 1), which run until Close.
func NewPool(n int) *Pool {
	n = max(n, 1)
	p := &Pool{n: n, tasks: make(chan func()), quit: make(chan struct{})}
	p.workers.Add(n)
	for i := 0; i < n; i++ {
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
		select {
		case f := <-p.tasks:
			f()
		case <-p.quit:
			return
		}
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

// Size returns the number of workers: the parallelism Run had before
// Close, which callers use to split their work.
func (p *Pool) Size() int { return p.n }

// Run runs every task and returns when all have finished. A task that
// panics is recovered where it ran; Run returns the first such panic as a
// *PanicError (the other tasks still run to their end). After Close, the
// tasks run on the caller, in order.
func (p *Pool) Run(tasks []func()) error {
	errs := make([]error, len(tasks))
	if len(tasks) == 1 {
		errs[0] = protect(tasks[0])
		return errs[0]
	}
	var wg sync.WaitGroup
	wg.Add(len(tasks))
	for i, t := range tasks {
		job := func() {
			defer wg.Done()
			errs[i] = protect(t)
		}
		select {
		case p.tasks <- job:
		case <-p.quit:
			job()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

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

// share runs f on the caller and, at the same time, on up to helpers of
// the pool's workers, and returns when every run has returned: f is a
// loop that claims its own work, so however many runs start, each part
// of the work runs once. A worker is handed its run as soon as it is
// free (the caller waits for that, as Run does, and then runs f itself).
// A run that panics is recovered where it ran; share returns the first
// such panic as a *PanicError. After Close only the caller runs f.
func (p *Pool) share(helpers int, f func()) error {
	errs := make([]error, helpers+1)
	var wg sync.WaitGroup
	for i := 1; i <= helpers; i++ {
		wg.Add(1)
		job := func() {
			defer wg.Done()
			errs[i] = protect(f)
		}
		select {
		case p.tasks <- job:
		case <-p.quit:
			wg.Done() // closed: the caller's run does the work
		}
	}
	errs[0] = protect(f)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// serialPool returns a pool of one and no workers: Run runs every task
// on its caller, and Close has nothing to stop.
func serialPool() *Pool {
	p := &Pool{n: 1, quit: make(chan struct{})}
	p.once.Do(func() { close(p.quit) })
	return p
}
