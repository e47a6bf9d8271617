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
type Pool struct {
	n     int
	tasks chan func()
}

// NewPool starts n workers (n >= 1). Workers live as long as the process.
func NewPool(n int) *Pool {
	n = max(n, 1)
	p := &Pool{n: n, tasks: make(chan func())}
	for i := 0; i < n; i++ {
		go func() {
			for f := range p.tasks {
				f()
			}
		}()
	}
	return p
}

// Size returns the number of workers.
func (p *Pool) Size() int { return p.n }

// Run runs every task and returns when all have finished. A task that
// panics is recovered where it ran; Run returns the first such panic as a
// *PanicError (the other tasks still run to their end).
func (p *Pool) Run(tasks []func()) error {
	errs := make([]error, len(tasks))
	if len(tasks) == 1 {
		errs[0] = protect(tasks[0])
		return errs[0]
	}
	var wg sync.WaitGroup
	wg.Add(len(tasks))
	for i, t := range tasks {
		p.tasks <- func() {
			defer wg.Done()
			errs[i] = protect(t)
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
