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
// its inputs, which of three ways a run is fastest: every step split as
// the engine decides, every step on the calling goroutine alone
// (gemm.Engine.Serial), or each step the way its own timings favour
// (mixed). It times splitWindow runs of the first two ways, alternating,
// each step's time within them too, then splitWindow mixed runs; it
// takes the way whose median run is lowest (a way that uses more cores
// than one must be faster than one core by 1/splitEdge of its time:
// equal runs on two cores leave one fewer core to other requests for
// nothing, and a tie within the timings' noise can be a loss), and keeps
// trying the other two, in turn, once every splitProbe runs, so that a
// host that changes (or a first guess that was wrong) changes the
// choice. A choice settled early (split and one core far apart after two
// runs each) tries the other way soon after, then at gaps that double:
// two runs each are weak evidence when a size's first runs are slowed
// for one way alone (PaddleOCR at batch 8 on two cores settled on one
// core from split runs of 14.5 ms against 6.7, where split runs take
// 3.5-5 once warm, and kept to it for 512 runs). A probe that the choice
// would prefer to the chosen way's median (by the same edge) is run
// again splitWindow-1 times at once, so the way's window holds its times
// of now rather than those of a slow start (a collection running beside
// the first runs after a load, a moment the two cores were far apart)
// and the choice follows within a few runs of the probe, not after
// several probes hundreds of runs apart. Every way computes the same
// bits: every split is of output units, never of a sum.
//
// Only a run alone on the engine is timed (gemm.Engine.Begin): under
// concurrent requests, to this model or others on the same engine, the
// runs slow each other, the cores are busy with request-level
// parallelism anyway, and each run takes the way chosen so far.
type splitTuner struct {
	exec  *gemm.Engine // the model's engine, which tells runs alone on it
	steps int          // the main graph's steps
	mu    sync.Mutex
	sizes map[int]*splitStats // by the number of input elements
}

const (
	splitWindow   = 5   // timed runs kept per way (and step times per step and way)
	splitProbe    = 64  // every splitProbe-th run of a size tries a way not chosen
	splitSizes    = 64  // input sizes a model tunes; runs of other sizes split
	splitSettle   = 2   // timed runs of split and one core that may settle the choice
	splitFar      = 1.5 // the ratio of their medians that settles it
	splitFarProbe = 8   // settled, the other way is tried at last this many times less often
	splitFirstGap = 8   // settled, runs to the first try of the other way; each gap after doubles
	splitEdge     = 32  // split and mixed are chosen over one core only when faster by 1/splitEdge
)

// The ways a run takes.
const (
	waySplit = iota // every step split as the engine decides
	wayOne          // every step on one core
	wayMixed        // each step the way its own timings favour (plan)
	ways
)

// newSplitTuner returns the tuner of a model of steps steps on exec, or
// nil when there is nothing to choose: an engine of one thread.
func newSplitTuner(exec *gemm.Engine, steps int) *splitTuner {
	if exec.Threads() <= 1 {
		return nil
	}
	return &splitTuner{exec: exec, steps: steps, sizes: map[int]*splitStats{}}
}

// window holds the last splitWindow durations of something timed.
type window struct {
	t [splitWindow]time.Duration
	n int // timed ever
}

func (w *window) add(d time.Duration) {
	w.t[w.n%splitWindow] = d
	w.n++
}

func (w *window) full() bool { return w.n >= splitWindow }

// median returns the median of the last splitWindow durations, or of all
// there are when fewer, the lower of the middle two of an even count (the
// faster of two): noise only ever slows a run.
func (w *window) median() time.Duration {
	t := w.t
	n := min(w.n, splitWindow)
	slices.Sort(t[:n])
	return t[(n-1)/2]
}

// splitStats is what a tuner knows of one input size.
type splitStats struct {
	runs    int
	last    int  // the way of the last run
	again   bool // the last run was the first of its way: the next takes it too
	times   [ways]window
	steps   [][2]window // per step, its times split and on one core
	mixed   []bool      // per step, whether the mixed way runs it on one core (plan)
	stale   bool        // steps has times mixed does not reflect
	chosen  int         // the way chosen
	probed  int         // the way of the last probe, until its timed run is recorded, or of confirm's runs; -1: none
	confirm int         // runs still to take way probed: its probe beat the choice
	// Settled, the other way's next try is at run probeAt, gap runs
	// after the last (gap 0: not yet set since the choice last changed).
	probeAt, gap int
}

func newSplitStats(steps int) *splitStats {
	return &splitStats{steps: make([][2]window, steps), mixed: make([]bool, steps), probed: -1}
}

// next returns the way the next run takes, and whether to time it: split
// and one core alternating until both have splitWindow timed runs (or
// splitSettle each, when one is splitFar times the other: the way that
// far behind is not tried further), then mixed until it has splitWindow
// too (unless settled), then the chosen way but for every splitProbe-th
// run, which takes the others in turn; settled, the other of split and
// one core splitFirstGap runs after, then at gaps that double up to
// splitProbe·splitFarProbe. A run that takes another way than the last
// is not timed, and the run after it takes the same way and is: the first run
// of a way finds the data where the last way left it (in the other
// core's cache, after a split run: a line to fetch from there for every
// one it writes), which the way's own runs do not.
func (s *splitStats) next() (w int, timed bool) {
	if s.again {
		s.again = false
		return s.last, true
	}
	s.runs++
	settled := s.settled()
	if settled && s.gap == 0 {
		s.gap = splitFirstGap
		s.probeAt = s.runs + s.gap
	}
	sp, one := &s.times[waySplit], &s.times[wayOne]
	switch {
	case s.confirm > 0:
		s.confirm--
		w = s.probed
		if s.confirm == 0 {
			s.probed = -1
		}
	case !settled && (!sp.full() || !one.full()):
		w = waySplit
		if one.n < sp.n {
			w = wayOne
		}
	case !settled && !s.times[wayMixed].full():
		w = wayMixed
	case settled && s.chosen != wayMixed && s.runs >= s.probeAt:
		w = waySplit + wayOne - s.chosen
		s.gap = min(2*s.gap, splitProbe*splitFarProbe)
		s.probeAt = s.runs + s.gap
		s.probed = w
	case (!settled || s.chosen == wayMixed) && s.runs%splitProbe == 0:
		w = (s.chosen + 1 + s.runs/splitProbe%2) % ways
		s.probed = w
	default:
		w = s.chosen
	}
	if w != s.last {
		s.last, s.again = w, true
		return w, false
	}
	return w, true
}

// decided reports whether every way has been timed enough to choose.
func (s *splitStats) decided() bool {
	return s.settled() || s.times[waySplit].full() && s.times[wayOne].full() && s.times[wayMixed].full()
}

// settled reports whether split and one core have splitSettle timed runs
// each and one's median is splitFar times the other's: the choice is
// clear without trying either further, or the mixed way at all.
func (s *splitStats) settled() bool {
	sp, one := &s.times[waySplit], &s.times[wayOne]
	if sp.n < splitSettle || one.n < splitSettle {
		return false
	}
	a, b := sp.median(), one.median()
	return float64(max(a, b)) >= splitFar*float64(min(a, b))
}

// record adds a timed run of way w (its steps' times took, each on one
// core where one says; none when took is nil) and chooses again.
func (s *splitStats) record(w int, d time.Duration, one []bool, took []time.Duration) {
	if w == s.probed && s.confirm == 0 { // a probe's timed run
		s.probed = -1
		if c := &s.times[s.chosen]; w != s.chosen && c.n > 0 && edged(w, d) < edged(s.chosen, c.median()) {
			s.probed, s.confirm = w, splitWindow-1
		}
	}
	s.times[w].add(d)
	for i, t := range took {
		if one[i] {
			s.steps[i][1].add(t)
		} else {
			s.steps[i][0].add(t)
		}
	}
	s.stale = true
	best, was := time.Duration(-1), s.chosen
	for w := range ways {
		t := &s.times[w]
		if !t.full() && !(s.settled() && t.n > 0) {
			continue
		}
		if d := edged(w, t.median()); best < 0 || d < best {
			s.chosen, best = w, d
		}
	}
	if s.chosen != was {
		s.gap = 0 // a new choice, settled, is tried against soon
	}
}

// edged returns d, a time of way w, with the edge a way that uses more
// than one core must win by (splitEdge) added: what the choice compares.
func edged(w int, d time.Duration) time.Duration {
	if w != wayOne {
		d += d / splitEdge
	}
	return d
}

// plan returns, per step, whether the mixed way runs it on one core: one
// core unless splitting the step is faster by 1/splitEdge of its time,
// by the step's medians, once both have splitWindow times. It
// is worked out from the step times when a mixed run (or SplitChoices)
// asks, not after every timed run: two medians a step, which a run of
// another way has no use for.
func (s *splitStats) plan() []bool {
	if s.stale {
		for i := range s.mixed {
			st := &s.steps[i]
			s.mixed[i] = st[0].full() && st[1].full() && st[1].median() < edged(waySplit, st[0].median())
		}
		s.stale = false
	}
	return s.mixed
}

// stepPlan is how one run of a graph runs its steps: on one core where
// one says, split elsewhere; a run that times its steps writes each
// one's time in took (nil: it does not).
type stepPlan struct {
	g    *graph
	one  []bool
	took []time.Duration
}

// splitStepEvery is how often a timed run of the chosen way times its
// steps once a size's ways are decided: the steps' windows (which the
// mixed way's plan is made of) follow the host a few runs later, and the
// other runs read no clock a step (two reads are about 75 ns, an eighth
// of a small convolution's step). Runs of a way not chosen (probes) and
// runs before the decision time their steps every time.
const splitStepEvery = 4

// planKey carries a run's stepPlan in its context.
type planKey struct{}

// planFor returns the plan ctx's run has for g, or nil.
func planFor(ctx context.Context, g *graph) *stepPlan {
	if p, ok := ctx.Value(planKey{}).(*stepPlan); ok && p.g == g {
		return p
	}
	return nil
}

// begin decides how a run of size input elements runs its steps and
// returns its plan. The run calls done with its time, and whether it
// succeeded, once it has returned; done reports whether the run was
// alone on the engine.
func (t *splitTuner) begin(g *graph, size int) (plan *stepPlan, done func(d time.Duration, ok bool) (alone bool)) {
	plan = &stepPlan{g: g, one: make([]bool, t.steps)}
	w := waySplit
	t.mu.Lock()
	s := t.sizes[size]
	if s == nil && len(t.sizes) < splitSizes {
		s = newSplitStats(t.steps)
		t.sizes[size] = s
	}
	timed := false
	if s != nil {
		w, timed = s.next()
		switch w {
		case wayOne:
			for i := range plan.one {
				plan.one[i] = true
			}
		case wayMixed:
			copy(plan.one, s.plan())
		}
	}
	if timed && (w != s.chosen || !s.decided() || s.runs%splitStepEvery == 0) {
		plan.took = make([]time.Duration, t.steps)
	}
	t.mu.Unlock()
	end := t.exec.Begin()
	return plan, func(d time.Duration, ok bool) bool {
		alone := end()
		if !timed || !alone || !ok {
			return alone
		}
		t.mu.Lock()
		s.record(w, d, plan.one, plan.took)
		t.mu.Unlock()
		return alone
	}
}

// executeSplit runs the main graph on args, its steps split across the
// engine's cores or on one as the tuner plans for their size, and times
// the run for it. A profiled run always splits as the engine decides.
func (m *Model) executeSplit(ctx context.Context, args []*tensor.Tensor, keep func(int) bool) ([]*tensor.Tensor, error) {
	vals, _, err := m.executeAlone(ctx, args, keep)
	return vals, err
}

// inputElements is the number of elements of a run's inputs, by which
// the split and row tuners tell the sizes of runs apart.
func inputElements(args []*tensor.Tensor) int {
	n := 0
	for _, t := range args {
		n += t.Len()
	}
	return n
}

// executeAlone is executeSplit, which also reports whether the run was
// alone on the engine (gemm.Engine.Begin; never for a profiled run).
func (m *Model) executeAlone(ctx context.Context, args []*tensor.Tensor, keep func(int) bool) ([]*tensor.Tensor, bool, error) {
	if profileOf(ctx) != nil {
		vals, err := m.graph.execute(ctx, args, nil, keep)
		return vals, false, err
	}
	if m.split == nil {
		end := m.exec.Begin()
		vals, err := m.graph.execute(ctx, args, nil, keep)
		return vals, end(), err
	}
	plan, done := m.split.begin(&m.graph, inputElements(args))
	start := time.Now()
	vals, err := m.graph.execute(context.WithValue(ctx, planKey{}, plan), args, nil, keep)
	alone := done(time.Since(start), err == nil)
	return vals, alone, err
}

// SplitChoice is what a model learned of runs of one input size
// (Model.SplitChoices).
type SplitChoice struct {
	// Elements is the number of input elements of the runs.
	Elements int
	// Decided reports whether every way has been timed enough to choose.
	Decided bool
	// Way is the way runs of this size take: "split" (every step split
	// as the engine decides), "one core", or "mixed" (each step the way
	// its own timings favour).
	Way string
	// Split, OneCore and Mixed are the median times of the last timed
	// runs of each way (Mixed 0 when a clear choice left it untried);
	// OneCoreSteps is how many steps the mixed way runs
	// on one core, of Steps.
	Split, OneCore, Mixed time.Duration
	OneCoreSteps, Steps   int
}

var wayNames = [ways]string{"split", "one core", "mixed"}

// SplitChoices returns, for each input size the model has run, which way
// its runs take across the engine's cores, as timed so far (splitTuner);
// nil on an engine of one thread.
func (m *Model) SplitChoices() []SplitChoice {
	t := m.split
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]SplitChoice, 0, len(t.sizes))
	for size, s := range t.sizes {
		c := SplitChoice{Elements: size, Way: wayNames[s.chosen], Steps: t.steps}
		c.Decided = s.decided()
		if c.Decided {
			c.Split, c.OneCore = s.times[waySplit].median(), s.times[wayOne].median()
			if s.times[wayMixed].n > 0 {
				c.Mixed = s.times[wayMixed].median()
			}
		}
		for _, one := range s.plan() {
			if one {
				c.OneCoreSteps++
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b SplitChoice) int { return a.Elements - b.Elements })
	return out
}

// engineKey carries the engine a subgraph's run uses: the one of the
// step that runs it.
type engineKey struct{}

// engineOf returns the engine a graph runs ctx's run on: the context's,
// else g's own.
func (g *graph) engineOf(ctx context.Context) *gemm.Engine {
	if e, ok := ctx.Value(engineKey{}).(*gemm.Engine); ok {
		return e
	}
	return g.exec
}
