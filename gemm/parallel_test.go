package gemm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
)

// parallelRun records what one call of Parallel did: how often each unit
// ran, the chunks, and the engines f was given.
type parallelRun struct {
	mu      sync.Mutex
	count   []int
	chunks  [][2]int
	engines map[*Engine]bool
}

func runParallel(e *Engine, n, work int) (*parallelRun, error) {
	r := &parallelRun{count: make([]int, n), engines: map[*Engine]bool{}}
	err := e.Parallel(n, work, func(pe *Engine, u0, u1 int) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.chunks = append(r.chunks, [2]int{u0, u1})
		r.engines[pe] = true
		for u := u0; u < u1; u++ {
			r.count[u]++
		}
		return nil
	})
	return r, err
}

// TestParallelRunsEveryUnitOnce: every unit of the loop runs exactly
// once, in chunks of consecutive units, whatever the threads, the units
// and the work; f is given e when the loop stays on the caller, e's
// one-core Serial engine when it is split.
func TestParallelRunsEveryUnitOnce(t *testing.T) {
	tb := dispatch.Default()
	for _, threads := range []int{1, 2, 3, 4} {
		e := newEngine(t, tb, threads)
		for _, n := range []int{0, 1, 2, 3, 7, 8, 64, 1000} {
			for _, work := range []int{0, 1000, MinParallelWork - 1, MinParallelWork, 1 << 30} {
				r, err := runParallel(e, n, work)
				if err != nil {
					t.Fatalf("threads %d n %d work %d: %v", threads, n, work, err)
				}
				for u, c := range r.count {
					if c != 1 {
						t.Fatalf("threads %d n %d work %d: unit %d ran %d times", threads, n, work, u, c)
					}
				}
				for _, ch := range r.chunks {
					if ch[0] >= ch[1] || ch[0] < 0 || ch[1] > n {
						t.Fatalf("threads %d n %d work %d: chunk %v", threads, n, work, ch)
					}
				}
				split := threads > 1 && n >= 4 && work >= MinParallelWork
				want := e
				if split {
					want = e.Serial()
				}
				if n > 0 && (len(r.engines) != 1 || !r.engines[want]) {
					t.Errorf("threads %d n %d work %d: f was given %v, want only %p (split %v)", threads, n, work, r.engines, want, split)
				}
				if split && len(r.chunks) < 2 {
					t.Errorf("threads %d n %d work %d: split into %d chunk(s)", threads, n, work, len(r.chunks))
				}
			}
		}
	}
}

// TestPartsFollowWork: work splits over one core for each minPartWork of
// it, never more cores than the engine has or the caller allows, and not
// at all below MinParallelWork: a small loop on a server of many cores
// wakes two, not all of them.
func TestPartsFollowWork(t *testing.T) {
	e := newEngine(t, dispatch.Default(), 8)
	for _, c := range []struct{ work, max, want int }{
		{0, 100, 1},
		{MinParallelWork - 1, 100, 1},
		{MinParallelWork, 100, 2},
		{3 * minPartWork, 100, 3},
		{3*minPartWork - 1, 100, 2},
		{1 << 30, 100, 8},
		{1 << 30, 3, 3},
		{1 << 30, 1, 1},
		{1 << 30, 0, 1},
	} {
		if got := e.parts(c.work, c.max); got != c.want {
			t.Errorf("parts(%d, %d) on 8 threads = %d, want %d", c.work, c.max, got, c.want)
		}
	}
	if got := newEngine(t, dispatch.Default(), 1).parts(1<<30, 100); got != 1 {
		t.Errorf("one thread: parts = %d, want 1", got)
	}
}

// TestParallelChunks: a chunk holds about parallelGrain of the work, and
// no more than a quarter of a runner's share of the units.
func TestParallelChunks(t *testing.T) {
	e := newEngine(t, dispatch.Default(), 2)
	for _, c := range []struct {
		n, work, want int
	}{
		{1000, 1000 * parallelGrain, 1},       // each unit is worth a chunk
		{1000, 1000 * parallelGrain / 10, 10}, // ten units make one
		{100, 1 << 30, 1},
		{64, 64, 16},         // on the caller: a quarter of the units
		{8000, 1 << 20, 125}, // split: parallelGrain per chunk
	} {
		r, err := runParallel(e, c.n, c.work)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.chunks {
			if ch[1] != c.n && ch[1]-ch[0] != c.want {
				t.Fatalf("n %d work %d: chunk %v, want %d units", c.n, c.work, ch, c.want)
			}
		}
	}
}

// TestParallelRunsAtOnce: a split loop runs on as many goroutines at once
// as the engine has threads (the caller one of them): the first chunk of
// each waits for all the others to have started.
func TestParallelRunsAtOnce(t *testing.T) {
	for _, threads := range []int{2, 3} {
		e := newEngine(t, dispatch.Default(), threads)
		var arrived sync.WaitGroup
		arrived.Add(threads)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		var waited atomic.Int32
		err := e.Parallel(2*threads, 1<<30, func(_ *Engine, u0, u1 int) error {
			if u0 >= threads {
				return nil
			}
			arrived.Done()
			select {
			case <-all:
				waited.Add(1)
				return nil
			case <-time.After(time.Minute):
				return fmt.Errorf("unit %d: the other runners never started", u0)
			}
		})
		if err != nil || int(waited.Load()) != threads {
			t.Fatalf("threads %d: %v, %d runners met", threads, err, waited.Load())
		}
	}
}

// TestParallelErrors: Parallel returns the error a chunk returned, and
// starts no chunk after it on the caller; a panic comes back as a
// *PanicError.
func TestParallelErrors(t *testing.T) {
	bad := errors.New("unit 5")
	for _, threads := range []int{1, 2, 4} {
		e := newEngine(t, dispatch.Default(), threads)
		for _, work := range []int{100, 1 << 30} {
			var after atomic.Int32
			var failed atomic.Bool
			err := e.Parallel(64, work, func(_ *Engine, u0, u1 int) error {
				if failed.Load() && threads == 1 {
					after.Add(1)
				}
				if u0 <= 5 && 5 < u1 {
					failed.Store(true)
					return bad
				}
				return nil
			})
			if !errors.Is(err, bad) || after.Load() != 0 {
				t.Errorf("threads %d work %d: %v, %d chunks after the error; want %v and none", threads, work, err, after.Load(), bad)
			}
			err = e.Parallel(64, work, func(_ *Engine, u0, u1 int) error {
				if u0 <= 9 && 9 < u1 {
					panic("unit 9")
				}
				return nil
			})
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != "unit 9" {
				t.Errorf("threads %d work %d: %v, want the panic as a *PanicError", threads, work, err)
			}
		}
	}
}

// TestSerial: an engine's Serial is made once, runs one thread on the
// same table with no worker of its own, computes the bits e does, and
// serves after e is closed; an engine of one thread is its own.
func TestSerial(t *testing.T) {
	for _, tb := range dispatch.Available() {
		one := newEngine(t, tb, 1)
		if one.Serial() != one {
			t.Errorf("%s: a one-thread engine's Serial is another engine", tb.Name)
		}
		before := runtime.NumGoroutine()
		e := New(tb, 3)
		s := e.Serial()
		if s == e || e.Serial() != s || s.Threads() != 1 || s.Table() != tb || s.Serial() != s {
			t.Fatalf("%s: Serial %p (threads %d, table %v), again %p; e %p", tb.Name, s, s.Threads(), s.Table(), e.Serial(), e)
		}
		if got := runtime.NumGoroutine(); got > before+3 {
			t.Errorf("%s: %d goroutines after New(3) and Serial, want at most %d", tb.Name, got, before+3)
		}
		r := rand.New(rand.NewPCG(3, 3))
		const m, k, n = 37, 70, 45
		a := randomActivations(r, m, k)
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		fw := PackF(k, n, wf, n)
		want, got := make([]float32, m*n), make([]float32, m*n)
		if err := e.MatMul(a, m, fw, want); err != nil {
			t.Fatal(err)
		}
		if err := s.MatMul(a, m, fw, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Serial's product differs from the engine's", tb.Name)
		}
		e.Close()
		clear(got)
		if err := s.MatMul(a, m, fw, got); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: after Close, Serial's product: %v, equal %v", tb.Name, err, slices.Equal(got, want))
		}
		r2, err := runParallel(e, 100, 1<<30)
		if err != nil || slices.ContainsFunc(r2.count, func(c int) bool { return c != 1 }) {
			t.Errorf("%s: Parallel after Close: %v, counts %v", tb.Name, err, r2.count)
		}
		if !goroutinesBackTo(before) {
			t.Errorf("%s: %d goroutines after Close, want %d", tb.Name, runtime.NumGoroutine(), before)
		}
	}
}

// BenchmarkForkJoin is the cost of splitting a loop across two cores and
// joining it: Parallel on four units of no work. Run it on a machine with
// two real cores; on SMT siblings it measures the hand-off only.
func BenchmarkForkJoin(b *testing.B) {
	e := New(dispatch.Default(), 2)
	defer e.Close()
	nop := func(*Engine, int, int) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Parallel(4, 1<<30, nop); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallLoop is a loop just large enough to split, of 128 units
// of about 30 ns each (4 µs on one core), on engines of one and two
// threads: on two real cores the second's time less half the first's is
// what a split costs beside its work (the hand-off, the join, the steals
// at the end), as BenchmarkForkJoin's empty loop does not show.
func BenchmarkSmallLoop(b *testing.B) {
	const units = 128
	for _, threads := range []int{1, 2} {
		e := New(dispatch.Default(), threads)
		defer e.Close()
		out := make([]float64, units*8) // a unit's result on a line of its own
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			for b.Loop() {
				err := e.Parallel(units, MinParallelWork, func(_ *Engine, u0, u1 int) error {
					for u := u0; u < u1; u++ {
						x := float64(u)
						for range 40 { // a dependent chain: ~30 ns
							x = x*1.0000001 + 1e-9
						}
						out[u*8] = x
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestClaimsOwnPartFirst: a run claims its own part's chunks first, in
// order, then the others'; whichever runs start, every unit is claimed
// exactly once, in chunks that never cross a part's end. One claims is
// reset for every loop, as a pooled loop's is, over more parts and fewer.
func TestClaimsOwnPartFirst(t *testing.T) {
	var cl claims
	for _, c := range []struct{ n, chunk, parts int }{
		{10, 1, 2}, {10, 3, 2}, {1000, 7, 3}, {5, 2, 4}, {64, 16, 4},
	} {
		for _, runs := range [][]int{{0}, {1}, {0, 1}, {c.parts - 1, 0}} {
			cl.reset(c.n, c.chunk, c.parts)
			count := make([]int, c.n)
			for _, part := range runs {
				first := true
				cl.run(part, func(u0, u1 int) bool {
					if first {
						if own, _ := span(part, c.n, c.parts); own < c.n && count[own] == 0 && u0 != own {
							t.Errorf("%+v run %d: first chunk at %d, want its part's start %d", c, part, u0, own)
						}
						first = false
					}
					for p := range c.parts {
						s, e := span(p, c.n, c.parts)
						if u0 >= s && u0 < e && u1 > e {
							t.Errorf("%+v: chunk [%d, %d) crosses part %d's end %d", c, u0, u1, p, e)
						}
					}
					for u := u0; u < u1; u++ {
						count[u]++
					}
					return true
				})
			}
			for u, k := range count {
				if k != 1 {
					t.Fatalf("%+v runs %v: unit %d claimed %d times", c, runs, u, k)
				}
			}
		}
	}
}

// TestRowChunkEven checks the row chunks of a product: multiples of the
// row tile, no more of them than 96-row chunks would make, and as even
// as whole tiles allow, so that two cores splitting 128 rows start with
// 64 each rather than 96 and 32.
func TestRowChunkEven(t *testing.T) {
	for _, mr := range []int{1, 4, 8, 12, 14} {
		most := mr * max(1, rowChunkRows/mr)
		for m := 1; m <= 2000; m++ {
			mc := rowChunk(mr, m)
			chunks := (m + mc - 1) / mc
			if mc%mr != 0 || mc > most || chunks > (m+most-1)/most {
				t.Fatalf("MR %d, %d rows: chunks of %d rows (%d of them), want multiples of %d of at most %d", mr, m, mc, chunks, mr, most)
			}
			if last := m - (chunks-1)*mc; chunks > 1 && chunks <= 4 && mc-last > chunks*mr {
				t.Fatalf("MR %d, %d rows: chunks of %d rows leave %d for the last", mr, m, mc, last)
			}
		}
	}
	if mc := rowChunk(8, 128); mc != 64 {
		t.Errorf("128 rows of 8-row tiles: chunks of %d rows, want 64", mc)
	}
}

// TestSplitAllocations: a loop split across two cores, Parallel's or a
// product's, allocates only its share's state (the claims, the first
// error and the closures come from a pool), and still runs every unit
// once and returns its error.
func TestSplitAllocations(t *testing.T) {
	e := New(dispatch.Default(), 2)
	defer e.Close()
	const n = 64
	var count [n]atomic.Int32
	each := func(_ *Engine, u0, u1 int) error {
		for u := u0; u < u1; u++ {
			count[u].Add(1)
		}
		return nil
	}
	units := func(u0, u1 int) { _ = each(nil, u0, u1) }
	if e.parts(1<<30, n/2) < 2 || e.parts(1<<30, n) < 2 {
		t.Fatal("the loops do not split")
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Parallel", func() error { return e.Parallel(n, 1<<30, each) }},
		{"run", func() error { return e.run(n, 1<<30, units) }},
	} {
		if err := c.run(); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(50, func() {
			if err := c.run(); err != nil {
				t.Fatal(err)
			}
		}); a > 1 && !raceEnabled { // the race detector's sync.Pool drops some of what it is given
			t.Errorf("%s: %v allocations a split loop, want at most 1", c.name, a)
		}
		for u := range count {
			if k := count[u].Swap(0); k != 52 { // the first run, the warm-up, 50 measured
				t.Fatalf("%s: unit %d ran %d times, want 52", c.name, u, k)
			}
		}
	}
	boom := errors.New("boom")
	if err := e.Parallel(n, 1<<30, func(_ *Engine, u0, u1 int) error {
		if u0 <= 40 && 40 < u1 {
			return boom
		}
		return nil
	}); err != boom {
		t.Errorf("a failing chunk: %v, want %v", err, boom)
	}
	if err := e.Parallel(n, 1<<30, each); err != nil {
		t.Errorf("the loop after a failed one: %v", err)
	}
}
