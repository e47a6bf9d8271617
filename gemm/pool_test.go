package gemm

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// goroutinesBackTo yields until at most n goroutines exist, a bounded
// number of times, and reports whether they did. A worker has left its
// loop when Close returns; the yields let it finish exiting, which may
// wait for its thread to get a core back from the operating system: the
// bound is generous, and reached only when a worker never stops.
func goroutinesBackTo(n int) bool {
	for i := 0; i < 1_000_000; i++ {
		if runtime.NumGoroutine() <= n {
			return true
		}
		runtime.Gosched()
	}
	return runtime.NumGoroutine() <= n
}

// settledGoroutines returns the number of goroutines once those that
// earlier tests' cleanups stopped have left (the count stopped falling
// over a hundred yields): a worker still on its way out when a test
// counts, and gone by its next count, would look like one of the test's
// own that never started.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for steady := 0; steady < 100; steady++ {
		runtime.Gosched()
		if m := runtime.NumGoroutine(); m < n {
			n, steady = m, 0
		}
	}
	return n
}

// TestPoolClose: Close stops every worker, is idempotent, and a closed
// pool still runs every task (on the caller) and reports panics.
func TestPoolClose(t *testing.T) {
	before := settledGoroutines()
	p := NewPool(4) // three workers, and the caller
	if got := runtime.NumGoroutine(); got < before+3 {
		t.Fatalf("%d goroutines after NewPool(4), want at least %d", got, before+3)
	}
	var ran atomic.Int32
	tasks := make([]func(), 8)
	for i := range tasks {
		tasks[i] = func() { ran.Add(1) }
	}
	if err := p.Run(tasks); err != nil || ran.Load() != 8 {
		t.Fatalf("Run before Close: %v, %d tasks ran", err, ran.Load())
	}
	p.Close()
	p.Close() // idempotent
	if !goroutinesBackTo(before) {
		t.Fatalf("%d goroutines after Close, want %d: the workers are still running", runtime.NumGoroutine(), before)
	}

	ran.Store(0)
	if err := p.Run(tasks); err != nil || ran.Load() != 8 {
		t.Fatalf("Run after Close: %v, %d tasks ran, want 8", err, ran.Load())
	}
	done := make([]bool, 3)
	err := p.Run([]func(){func() { done[0] = true }, func() { panic(errors.New("task")) }, func() { done[2] = true }})
	var pe *PanicError
	if !errors.As(err, &pe) || !done[0] || !done[2] {
		t.Errorf("Run after Close = %v, ran %v: want the panic as a PanicError and the other tasks run", err, done)
	}
	if runtime.NumGoroutine() > before {
		t.Errorf("Run after Close started goroutines: %d, want %d", runtime.NumGoroutine(), before)
	}
}

// TestPoolCloseDuringRun closes a pool while Runs are in flight: every
// task of every Run still runs exactly once, and the workers leave.
func TestPoolCloseDuringRun(t *testing.T) {
	before := settledGoroutines()
	p := NewPool(3)
	const runners, rounds, width = 4, 50, 6
	var count atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for r := 0; r < runners; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < rounds; i++ {
				tasks := make([]func(), width)
				for j := range tasks {
					tasks[j] = func() { count.Add(1) }
				}
				if err := p.Run(tasks); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	runtime.Gosched()
	p.Close()
	wg.Wait()
	if got := count.Load(); got != runners*rounds*width {
		t.Errorf("%d tasks ran, want %d", got, runners*rounds*width)
	}
	if !goroutinesBackTo(before) {
		t.Errorf("%d goroutines after Close, want %d", runtime.NumGoroutine(), before)
	}
}

// TestEngineClose: a closed engine gives the same bits as an open one
// (on one core), Close is idempotent, and Default's shared engine is
// never closed.
func TestEngineClose(t *testing.T) {
	before := settledGoroutines()
	m, k, n := 256, 96, 80 // split across the workers while they run
	if m*k*n < MinParallelWork {
		t.Fatal("the product no longer splits across workers: grow it")
	}
	for _, tb := range dispatch.Available() {
		open := New(tb, 2)
		closed := New(tb, 2)
		closed.Close()
		closed.Close()
		wf := make([]float32, k*n)
		act := make([]float32, m*k)
		for i := range wf {
			wf[i] = float32(i%13) - 6
		}
		for i := range act {
			act[i] = float32(i%7) - 3
		}
		w, err := quant.QuantizeWeights(wf, k, n, quant.PerChannel)
		if err != nil {
			t.Fatal(err)
		}
		qw, _ := PackQ(w)
		fw := PackF(k, n, wf, n)
		want, got := make([]float32, m*n), make([]float32, m*n)
		if err := open.QMatMul(act, m, qw, want); err != nil {
			t.Fatal(err)
		}
		if err := closed.QMatMul(act, m, qw, got); err != nil {
			t.Fatalf("%s: QMatMul after Close: %v", tb.Name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: QMatMul after Close differs", tb.Name)
		}
		if err := open.MatMul(act, m, fw, want); err != nil {
			t.Fatal(err)
		}
		if err := closed.MatMul(act, m, fw, got); err != nil {
			t.Fatalf("%s: MatMul after Close: %v", tb.Name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: MatMul after Close differs", tb.Name)
		}
		open.Close()
	}
	if !goroutinesBackTo(before) {
		t.Errorf("%d goroutines after closing every engine, want %d", runtime.NumGoroutine(), before)
	}

	d := Default()
	d.Close()
	select {
	case <-d.pool.quit:
		t.Fatal("Close stopped the shared Default engine")
	default:
	}
	if Default() != d {
		t.Fatal("Default changed")
	}
}

// goid returns the calling goroutine's id, read from its stack header.
func goid() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	return f[1]
}

// TestShareWaitsForLateHelper: share returns only after every helper's
// run has returned, also when a helper outlasts the caller's spin and the
// caller parks for it; and the park is woken by the helper's return.
func TestShareWaitsForLateHelper(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	release := make(chan struct{})
	joinParks = func() { close(release) }
	defer func() { joinParks = nil }()
	caller := goid()
	var entered sync.WaitGroup
	entered.Add(2)
	var helperDone atomic.Bool
	err := p.share(1, func(int) {
		entered.Done()
		entered.Wait() // both runs started: the helper cannot miss its turn
		if goid() == caller {
			return
		}
		<-release // until the caller has given up spinning and parks
		helperDone.Store(true)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !helperDone.Load() {
		t.Fatal("share returned before its helper's run did")
	}
}

// TestPoolWithoutSpin: workers that park at once after each task
// (NewPoolSpin with 0) still run every task of every Run exactly once,
// run after run, and an engine on such a pool gives the products' bits
// of one that spins.
func TestPoolWithoutSpin(t *testing.T) {
	p := NewPoolSpin(3, 0)
	defer p.Close()
	for round := 0; round < 200; round++ {
		var runs [16]atomic.Int32
		tasks := make([]func(), len(runs))
		for i := range tasks {
			tasks[i] = func() { runs[i].Add(1) }
		}
		if err := p.Run(tasks); err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			if n := runs[i].Load(); n != 1 {
				t.Fatalf("round %d: task %d ran %d times", round, i, n)
			}
		}
	}
	m, k, n := 256, 96, 80
	if m*k*n < MinParallelWork {
		t.Fatal("the product no longer splits across workers: grow it")
	}
	a, wf := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range wf {
		wf[i] = float32(i%13) - 6
	}
	fw := PackF(k, n, wf, n)
	spinning, parking := New(dispatch.Default(), 2), NewSpin(dispatch.Default(), 2, 0)
	defer spinning.Close()
	defer parking.Close()
	want, got := make([]float32, m*n), make([]float32, m*n)
	for round := 0; round < 20; round++ {
		if err := spinning.MatMul(a, m, fw, want); err != nil {
			t.Fatal(err)
		}
		if err := parking.MatMul(a, m, fw, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: the engine without spin gives other bits", round)
		}
	}
}

// TestShareSkipsBusyWorker: a worker in one share's run is not handed
// another's; the second share runs on its caller alone, and the first
// share's helper still runs its part once.
func TestShareSkipsBusyWorker(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	started, release := make(chan struct{}), make(chan struct{})
	var aParts, bParts [2]atomic.Int32
	err := p.share(1, func(part int) {
		aParts[part].Add(1)
		if part == 1 {
			close(started)
			<-release
			return
		}
		<-started // the worker holds A's part 1
		if err := p.share(1, func(part int) { bParts[part].Add(1) }); err != nil {
			t.Error(err)
		}
		close(release)
	})
	if err != nil {
		t.Fatal(err)
	}
	if aParts[0].Load() != 1 || aParts[1].Load() != 1 {
		t.Errorf("first share's parts ran %d and %d times, want once each", aParts[0].Load(), aParts[1].Load())
	}
	if bParts[0].Load() != 1 || bParts[1].Load() != 0 {
		t.Errorf("second share's parts ran %d and %d times, want its caller's alone", bParts[0].Load(), bParts[1].Load())
	}
}

// BenchmarkShare is the hand-off of a run to a spinning worker and back:
// share's caller waits in its own run until the helper's has started.
// Run it on a machine with two real cores.
func BenchmarkShare(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	for b.Loop() {
		var started atomic.Bool
		deadline := time.Now().Add(time.Millisecond)
		p.share(1, func(part int) {
			if part == 1 {
				started.Store(true)
				return
			}
			for !started.Load() && time.Now().Before(deadline) {
			}
		})
	}
}

// BenchmarkLineTransfer is the floor under every hand-off between two
// cores: one goroutine writes a counter, another waits for it and writes
// it back, so each op moves one cache line there and back. Half of it is
// what a core pays for each line the other core last wrote (0.08-0.26 µs
// on a Zen 5 virtual machine, as the host placed its two vCPUs: a
// hand-off, its join and a steal each move a few). Run it on a machine
// with two real cores.
func BenchmarkLineTransfer(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two cores (-cpu 2): on one, each op waits for a preemption")
	}
	var line struct {
		_ [64]byte
		v atomic.Int64
		_ [64]byte
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			switch v := line.v.Load(); {
			case v < 0:
				return
			case v%2 == 1:
				line.v.Store(v + 1)
			}
		}
	}()
	var i int64
	for b.Loop() {
		i += 2
		line.v.Store(i - 1)
		for line.v.Load() != i {
		}
	}
	line.v.Store(-1)
	<-done
}
