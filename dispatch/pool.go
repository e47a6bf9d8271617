package dispatch

import "sync"

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

// Run runs every task on the pool and returns when all have finished.
func (p *Pool) Run(tasks []func()) {
	if len(tasks) == 1 {
		tasks[0]()
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(tasks))
	for _, t := range tasks {
		p.tasks <- func() {
			defer wg.Done()
			t()
		}
	}
	wg.Wait()
}
