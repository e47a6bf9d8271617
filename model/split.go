package model

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/tensor"
)

// Whether a run splits. A model's operators split their loops across the
// engine's cores when a loop's work outweighs a hand-off between cores
// (gemm.Engine.Parallel), but whether the splits pay for a whole run
// depends on the host as much as on the work: a loop's chunks read what
// the last loop wrote, and the cost of a cache line moving between two
// cores ranges from tens of nanoseconds (one die) to hundreds (two dies,
// two sockets, a hypervisor's placement). On a virtual machine whose two
// vCPUs moved between such placements from one minute to the next,
// PaddleOCR at batch 1 (fifty layers in 0.7 ms) took 0.64 ms a run on two
// threads in one placement and 1.0-1.2 ms in the other, against 0.73 ms
// on one, while a 512x512x512 product scaled 1.8x in both.
//
// So a model on an engine of several threads learns, for each size of
// its inputs, which of two ways a run is faster: split as the engine
// decides, or on the calling goroutine alone (gemm.Engine.Serial). It
// times splitWindow runs of each way, alternating, takes the way whose
// median is lower, and keeps trying the other way once every splitProbe
// runs, so that a host that changes (or a first guess that was wrong)
// changes the choice within a few hundred runs. Both ways compute the
// same bits: every split is of output units, never of a sum.
//
// Only a run alone on the engine is timed (gemm.Engine.Begin): under
// concurrent requests, to this model or others on the same engine, the
// runs slow each other, the cores are busy with request-level
// parallelism anyway, and each run takes the way chosen so far.
type splitTuner struct {
	exec  *gemm.Engine // the model's engine, which tells runs alone on it
	mu    sync.Mutex
	sizes map[int]*splitStats // by the number of input elements
}

const (
	splitWindow = 5   // timed runs kept per way
	splitProbe  = 32  // every splitProbe-th run of a size takes the way not chosen
	splitSizes  = 256 // input sizes a model tunes; runs of other sizes split
)

// newSplitTuner returns the tuner of a model on exec, or nil when there is
// nothing to choose: an engine of one thread.
func newSplitTuner(exec *gemm.Engine) *splitTuner {
	if exec.Threads() <= 1 {
		return nil
	}
	return &splitTuner{exec: exec, sizes: map[int]*splitStats{}}
}

// splitStats is what a tuner knows of one input size.
type splitStats struct {
	runs   int
	times  [2][splitWindow]time.Duration // per way ([1]: one core), the last timed runs
	timed  [2]int                        // per way, timed runs ever
	serial bool                          // the way chosen: one core
}

// next returns the way the next run takes: alternating until both ways
// have splitWindow timed runs, then the chosen one but for every
// splitProbe-th run.
func (s *splitStats) next() (serial bool) {
	s.runs++
	if s.timed[0] < splitWindow || s.timed[1] < splitWindow {
		return s.timed[1] < s.timed[0]
	}
	if s.runs%splitProbe == 0 {
		return !s.serial
	}
	return s.serial
}

// record adds a timed run of one way and chooses again.
func (s *splitStats) record(serial bool, d time.Duration) {
	w := way(serial)
	s.times[w][s.timed[w]%splitWindow] = d
	s.timed[w]++
	if s.timed[0] >= splitWindow && s.timed[1] >= splitWindow {
		s.serial = median(s.times[1]) < median(s.times[0])
	}
}

func way(serial bool) int {
	if serial {
		return 1
	}
	return 0
}

func median(t [splitWindow]time.Duration) time.Duration {
	slices.Sort(t[:])
	return t[splitWindow/2]
}

// begin decides how a run of size input elements runs: on one core
// (serial) or split. The run calls done with its time, and whether it
// succeeded, once it has returned.
func (t *splitTuner) begin(size int) (serial bool, done func(d time.Duration, ok bool)) {
	t.mu.Lock()
	s := t.sizes[size]
	if s == nil && len(t.sizes) < splitSizes {
		s = new(splitStats)
		t.sizes[size] = s
	}
	if s != nil {
		serial = s.next()
	}
	t.mu.Unlock()
	end := t.exec.Begin()
	return serial, func(d time.Duration, ok bool) {
		if alone := end(); s == nil || !alone || !ok {
			return
		}
		t.mu.Lock()
		s.record(serial, d)
		t.mu.Unlock()
	}
}

// executeSplit runs the main graph on args split across the engine's cores
// or on one, as the tuner chooses for their size, and times the run for it.
// A profiled run always splits as the engine decides.
func (m *Model) executeSplit(ctx context.Context, args []*tensor.Tensor, keep func(int) bool) ([]*tensor.Tensor, error) {
	if m.split == nil || profileOf(ctx) != nil {
		return m.graph.execute(ctx, args, nil, keep)
	}
	size := 0
	for _, t := range args {
		size += t.Len()
	}
	serial, done := m.split.begin(size)
	if serial {
		ctx = context.WithValue(ctx, engineKey{}, m.graph.exec.Serial())
	}
	start := time.Now()
	vals, err := m.graph.execute(ctx, args, nil, keep)
	done(time.Since(start), err == nil)
	return vals, err
}

// SplitChoice is what a model learned of runs of one input size
// (Model.SplitChoices).
type SplitChoice struct {
	// Elements is the number of input elements of the runs.
	Elements int
	// Decided reports whether both ways have been timed enough to choose.
	Decided bool
	// OneCore reports whether runs of this size take one core.
	OneCore bool
	// Split and Serial are the median times of the last timed runs of
	// either way.
	Split, Serial time.Duration
}

// SplitChoices returns, for each input size the model has run, whether its
// runs split across the engine's cores or take one, as timed so far
// (splitTuner); nil on an engine of one thread.
func (m *Model) SplitChoices() []SplitChoice {
	t := m.split
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]SplitChoice, 0, len(t.sizes))
	for size, s := range t.sizes {
		c := SplitChoice{Elements: size, Decided: s.timed[0] >= splitWindow && s.timed[1] >= splitWindow, OneCore: s.serial}
		if c.Decided {
			c.Split, c.Serial = median(s.times[0]), median(s.times[1])
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b SplitChoice) int { return a.Elements - b.Elements })
	return out
}

// engineKey carries the engine a run's graphs use instead of their own
// (the one-core engine of a run the tuner keeps on one core).
type engineKey struct{}

// engineOf returns the engine a graph runs ctx's run on: the context's,
// else g's own.
func (g *graph) engineOf(ctx context.Context) *gemm.Engine {
	if e, ok := ctx.Value(engineKey{}).(*gemm.Engine); ok {
		return e
	}
	return g.exec
}
