package gemm

import (
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/quant"
)

// TestProbe: a probed engine reports work that splits (a Parallel loop of
// enough units and work, a product of enough multiply-adds) and not work
// that does not, whatever its thread count, and Take starts over.
func TestProbe(t *testing.T) {
	for _, threads := range []int{1, 2} {
		e := New(dispatch.Default(), threads)
		var p Probe
		pe := e.Probed(&p)
		nop := func(*Engine, int, int) error { return nil }
		if err := pe.Parallel(64, MinParallelWork/2, nop); err != nil || p.Take() {
			t.Errorf("threads %d: a small loop counted as splitting (%v)", threads, err)
		}
		for _, n := range []int{1, 3} { // a part needs two units
			if err := pe.Parallel(n, 4*MinParallelWork, nop); err != nil || p.Take() {
				t.Errorf("threads %d: a loop of %d units counted as splitting (%v)", threads, n, err)
			}
		}
		if err := pe.Parallel(64, 4*MinParallelWork, nop); err != nil || !p.Take() {
			t.Errorf("threads %d: a large loop not counted (%v)", threads, err)
		}
		if p.Take() {
			t.Errorf("threads %d: Take did not start over", threads)
		}
		const m, k, n = 64, 256, 128 // 2 M multiply-adds
		a := make([]float32, m*k)
		c := make([]float32, m*n)
		w := PackF(k, n, make([]float32, k*n), n)
		if err := pe.MatMul(a, m, w, c); err != nil || !p.Take() {
			t.Errorf("threads %d: a product of %d multiply-adds not counted (%v)", threads, m*k*n, err)
		}
		if err := pe.MatMul(a[:k], 1, w, c[:n]); err != nil || p.Take() {
			t.Errorf("threads %d: a one-row product counted (%v)", threads, err)
		}
		// The same product in int8 is a quarter of the work: under the
		// threshold at 64×256×32, over it at 64×256×128.
		for _, q := range []struct {
			n     int
			split bool
		}{{32, false}, {128, true}} {
			if m*k*q.n < MinParallelWork || (m*k*q.n/QMACsPerUnit >= MinParallelWork) == !q.split {
				t.Fatalf("%d×%d×%d no longer tells int8 work from float32 work: change it", m, k, q.n)
			}
			qw, err := quant.QuantizeWeights(make([]float32, k*q.n), k, q.n, quant.PerChannel)
			if err != nil {
				t.Fatal(err)
			}
			pw, err := PackQ(qw)
			if err != nil {
				t.Fatal(err)
			}
			if err := pe.QMatMul(a, m, pw, c[:m*q.n]); err != nil || p.Take() != q.split {
				t.Errorf("threads %d: an int8 product of %d multiply-adds counted %v, want %v (%v)", threads, m*k*q.n, !q.split, q.split, err)
			}
		}
		if err := e.MatMul(a, m, w, c); err != nil || p.Take() {
			t.Errorf("threads %d: the unprobed engine reported to the probe (%v)", threads, err)
		}
		e.Close()
	}
}

// TestProbeTime: the probe times work that could split, and only the
// outermost of work nested on the caller: a small loop adds nothing, a
// large one some time, and a large loop whose chunks run large products
// (on the caller, with one thread) no more than the wall time around it.
func TestProbeTime(t *testing.T) {
	for _, threads := range []int{1, 2} {
		e := New(dispatch.Default(), threads)
		var p Probe
		pe := e.Probed(&p)
		nop := func(*Engine, int, int) error { return nil }
		if err := pe.Parallel(64, MinParallelWork/2, nop); err != nil || p.TakeTime() != 0 {
			t.Errorf("threads %d: a small loop timed (%v)", threads, err)
		}
		const m, k, n = 64, 256, 128
		a := make([]float32, m*k)
		c := make([]float32, 4*m*n)
		w := PackF(k, n, make([]float32, k*n), n)
		start := time.Now()
		err := pe.Parallel(4, 4*m*k*n, func(ce *Engine, u0, u1 int) error {
			for u := u0; u < u1; u++ {
				if err := ce.MatMul(a, m, w, c[u*m*n:(u+1)*m*n]); err != nil {
					return err
				}
			}
			return nil
		})
		wall := time.Since(start)
		if got := p.TakeTime(); err != nil || got <= 0 || got > wall {
			t.Errorf("threads %d: a loop of products timed %v in %v of wall time (%v)", threads, got, wall, err)
		}
		if p.TakeTime() != 0 {
			t.Errorf("threads %d: TakeTime did not start over", threads)
		}
		e.Close()
	}
}

// TestClock: Clock's readings never go back, and a span between two of
// them contains a span time measures inside it.
func TestClock(t *testing.T) {
	c0 := Clock()
	start := time.Now()
	for range 1000 {
		_ = time.Now()
	}
	inner := time.Since(start)
	c1 := Clock()
	if c1 < c0 || c1-c0 < inner {
		t.Errorf("Clock read %v then %v around a span of %v", c0, c1, inner)
	}
}

// BenchmarkClock is a reading of Clock, the probes' clock, against one
// of time.Now, which also reads the wall clock.
func BenchmarkClock(b *testing.B) {
	var sink time.Duration
	b.Run("Clock", func(b *testing.B) {
		for b.Loop() {
			sink += Clock()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			sink += time.Duration(time.Now().Nanosecond())
		}
	})
	_ = sink
}
