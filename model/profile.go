package model

import (
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/quantserve/quantserve/gemm"
)

// Profile records where a model's runs spend their time, node by node:
// WithProfile puts one in a run's context, and every step of the main
// graph adds its time (a control-flow node's includes its body's). A run
// keeps its steps' times to itself and adds them under one lock when it
// returns, so profiling costs a step two clock reads, and two more each
// product or loop that could split: a profiled run takes about as long as
// an unprofiled one. It is safe for concurrent use.
type Profile struct {
	// Labels, when set, also marks the CPU samples of each step with
	// pprof labels node and op (go tool pprof -tagfocus node=NAME). A
	// labelled step costs an allocation and two label switches, counted
	// in its time: set it for CPU profiles, not for timing alone.
	Labels bool

	mu    sync.Mutex
	nodes map[string]*NodeTime
	order []string
}

// NodeTime is one node's share of a profile.
type NodeTime struct {
	Node, Op string
	Runs     int
	Time     time.Duration
	// Parallel is the part of Time spent in work that splits across
	// cores (a product or a ParallelFor loop large enough, timed from its
	// start to its end; gemm.Probe): with more threads that time shrinks,
	// the rest of the node's time is serial.
	Parallel time.Duration
}

type profileKey struct{}

// WithProfile returns ctx whose runs record their steps in p.
func WithProfile(ctx context.Context, p *Profile) context.Context {
	return context.WithValue(ctx, profileKey{}, p)
}

func profileOf(ctx context.Context) *Profile {
	p, _ := ctx.Value(profileKey{}).(*Profile)
	return p
}

// addRun adds one run's step times to p under one lock.
func (p *Profile) addRun(steps []step, times []stepTime) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = map[string]*NodeTime{}
	}
	for i, t := range times {
		if !t.ran {
			continue
		}
		st := &steps[i]
		n := p.nodes[st.name]
		if n == nil {
			n = &NodeTime{Node: st.name, Op: st.desc.Type}
			p.nodes[st.name] = n
			p.order = append(p.order, st.name)
		}
		n.Runs++
		n.Time += t.took
		n.Parallel += min(t.parallel, t.took)
	}
}

// Nodes returns the nodes' times in the order they first ran.
func (p *Profile) Nodes() []NodeTime {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]NodeTime, 0, len(p.order))
	for _, name := range p.order {
		out = append(out, *p.nodes[name])
	}
	return out
}

// ByOp returns the nodes' times summed by operator type, the most time
// first.
func (p *Profile) ByOp() []NodeTime {
	sums := map[string]*NodeTime{}
	var ops []string
	for _, n := range p.Nodes() {
		s := sums[n.Op]
		if s == nil {
			s = &NodeTime{Node: "", Op: n.Op}
			sums[n.Op] = s
			ops = append(ops, n.Op)
		}
		s.Runs += n.Runs
		s.Time += n.Time
		s.Parallel += n.Parallel
	}
	out := make([]NodeTime, 0, len(ops))
	for _, op := range ops {
		out = append(out, *sums[op])
	}
	slices.SortStableFunc(out, func(a, b NodeTime) int { return int(b.Time - a.Time) })
	return out
}

// SerialFraction returns the share of the profiled time spent outside
// work that splits across cores: the part more threads cannot shorten.
func (p *Profile) SerialFraction() float64 {
	var total, par time.Duration
	for _, n := range p.Nodes() {
		total += n.Time
		par += n.Parallel
	}
	if total == 0 {
		return 0
	}
	return float64(total-par) / float64(total)
}

// stepProbe times the steps of a profiled run.
type stepProbe struct {
	p      *Profile
	probe  gemm.Probe
	labels bool
	times  []stepTime // by step
}

// stepTime is one step's time in a run and the part of it in work that
// splits.
type stepTime struct {
	took, parallel time.Duration
	ran            bool
}

func newStepProbe(p *Profile, steps int) *stepProbe {
	return &stepProbe{p: p, labels: p.Labels, times: make([]stepTime, steps)}
}

// flush adds the run's step times to the profile.
func (sp *stepProbe) flush(steps []step) { sp.p.addRun(steps, sp.times) }

// took records step i's time.
func (sp *stepProbe) took(i int, d time.Duration) {
	sp.probe.Take()
	sp.times[i] = stepTime{took: d, parallel: sp.probe.TakeTime(), ran: true}
}

// label marks the goroutine's CPU samples with the step it runs (pprof
// labels node and op) until the step ends: a Go CPU profile of profiled
// runs then splits by node (go tool pprof -tagfocus node=NAME). Work a
// step hands to the pool's other goroutines is not labelled: at one
// thread there is none.
func (sp *stepProbe) label(ctx context.Context, node, op string) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("node", node, "op", op)))
}
