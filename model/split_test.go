package model

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// simulate runs n runs of s, each step of a run costing split[i] split
// and one[i] on one core, and returns the ways taken and whether each
// run was timed.
func simulate(s *splitStats, n int, split, one []time.Duration) (taken []int, timed []bool) {
	for range n {
		w, t := s.next()
		onOne := make([]bool, len(split))
		took := make([]time.Duration, len(split))
		var d time.Duration
		for i := range split {
			onOne[i] = w == wayOne || w == wayMixed && s.plan()[i]
			took[i] = split[i]
			if onOne[i] {
				took[i] = one[i]
			}
			d += took[i]
		}
		if t {
			s.record(w, d, onOne, took)
		}
		taken, timed = append(taken, w), append(timed, t)
	}
	return taken, timed
}

func newStats(steps int) *splitStats { return newSplitStats(steps) }

// TestSplitStatsChooses walks one input size's choice through its runs
// where the ways are close and each wins some steps: split and one core
// alternating (each first run of a way untimed), then the mixed way,
// which runs each step the faster way and is chosen; a probe of each
// other way every splitProbe runs; and a new choice once the host
// changes.
func TestSplitStatsChooses(t *testing.T) {
	ms := time.Millisecond
	split := []time.Duration{ms, ms, ms}           // 3 ms a run
	one := []time.Duration{ms / 2, 2 * ms, ms / 2} // 3 ms; mixed 2 ms
	s := newStats(3)
	taken, timed := simulate(s, 4*splitWindow+2*splitWindow+4, split, one)
	for i, w := range taken {
		if switched := i > 0 && w != taken[i-1]; timed[i] == switched {
			t.Fatalf("run %d took way %d after way %d and was timed %v: a way's first run is untimed, its next timed", i, w, taken[i-1], timed[i])
		}
	}
	for w := range ways {
		if s.times[w].n < splitWindow {
			t.Fatalf("after exploring, way %d has %d timed runs, want %d (ways taken %v)", w, s.times[w].n, splitWindow, taken)
		}
	}
	if s.chosen != wayMixed || !slices.Equal(s.plan(), []bool{true, false, true}) {
		t.Fatalf("chose way %d, mixed plan %v; want mixed (2 ms against 3) with steps 0 and 2 on one core", s.chosen, s.plan())
	}
	taken, _ = simulate(s, 4*splitProbe, split, one)
	others := 0
	for _, w := range taken {
		if w != wayMixed {
			others++
		}
	}
	if others != 4*2 { // four probes, each a first run and a timed one
		t.Fatalf("%d of %d runs took another way than the chosen, want 8 (ways %v)", others, len(taken), taken)
	}
	// The host changes: splitting gets twice as fast. The probes see it
	// and, once they are the median of their window, the choice follows.
	fast := []time.Duration{ms / 2, ms / 2, ms / 2}
	runs := 0
	for s.chosen != waySplit && runs < 20*splitProbe {
		simulate(s, 1, fast, one)
		runs++
	}
	if s.chosen != waySplit {
		t.Fatalf("after %d runs with splitting fastest, the choice is way %d", runs, s.chosen)
	}
	if want := 2 * splitProbe * (splitWindow/2 + 1); runs > want {
		t.Fatalf("the choice changed after %d runs, want at most %d", runs, want)
	}
}

// TestSplitStatsEdge: a way that uses more than one core is chosen over
// one core only when it is faster by 1/splitEdge of its time; a tie, or
// a split a hair faster, runs on one core, each step too.
func TestSplitStatsEdge(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name       string
		split, one time.Duration
		want       int
	}{
		{"equal", ms, ms, wayOne},
		{"split 1% faster", 99 * ms / 100, ms, wayOne},
		{"split 5% faster", 95 * ms / 100, ms, waySplit},
		{"one core 1% faster", ms, 99 * ms / 100, wayOne},
	} {
		s := newStats(2)
		simulate(s, 4*splitWindow+2*splitWindow+4, []time.Duration{c.split, c.split}, []time.Duration{c.one, c.one})
		if s.chosen != c.want {
			t.Errorf("%s: chose way %d, want %d", c.name, s.chosen, c.want)
		}
		want := []bool{c.want == wayOne, c.want == wayOne}
		if plan := s.plan(); !slices.Equal(plan, want) {
			t.Errorf("%s: the mixed way's plan %v, want %v (true: one core)", c.name, plan, want)
		}
	}
}

// TestSplitStatsEdgeProbe: with one core chosen, probes of a split a hair
// faster (under the edge) are not run again: each probe is its two runs,
// and the choice stays.
func TestSplitStatsEdgeProbe(t *testing.T) {
	ms := time.Millisecond
	s := newStats(2)
	simulate(s, 4*splitWindow+2*splitWindow+4, []time.Duration{ms / 2, ms / 2}, []time.Duration{ms / 2, ms / 2})
	taken, _ := simulate(s, 8*splitProbe, []time.Duration{99 * ms / 200, 99 * ms / 200}, []time.Duration{ms / 2, ms / 2})
	others := 0
	for _, w := range taken {
		if w != wayOne {
			others++
		}
	}
	if s.chosen != wayOne || others != 8*2 {
		t.Fatalf("chose way %d with %d runs of other ways, want one core and 16 (eight probes of two runs)", s.chosen, others)
	}
}

// TestSplitStatsSettles checks that split and one core far apart settle
// the choice after splitSettle timed runs each: the slow way is tried
// splitFirstGap runs after, then at gaps that double up to
// splitProbe·splitFarProbe, each try a first run and a timed one; the
// mixed way never runs.
func TestSplitStatsSettles(t *testing.T) {
	ms := time.Millisecond
	s := newStats(2)
	taken, _ := simulate(s, 6*splitProbe*splitFarProbe, []time.Duration{ms, ms}, []time.Duration{3 * ms, 3 * ms})
	if !s.settled() || s.chosen != waySplit {
		t.Fatalf("one core at 3x split: settled %v, chose way %d", s.settled(), s.chosen)
	}
	if slices.Contains(taken, wayMixed) {
		t.Fatalf("a settled choice ran the mixed way")
	}
	// The runs on one core: 2·splitSettle while settling, then the tries.
	var tries []int
	for i := 2 * 2 * splitSettle; i < len(taken); i++ {
		if taken[i] == wayOne {
			if taken[i+1] != wayOne || taken[i+2] != waySplit {
				t.Fatalf("a try of one core at run %d is not two runs (ways %v)", i, taken[i:i+3])
			}
			tries = append(tries, i)
			i++
		}
	}
	// A try is two runs, and the run back to the choice is two (a way's
	// first run untimed, its next timed), of which runs count one each:
	// the k-th try follows the one before by its gap and two.
	if settling := 2 * 2 * splitSettle; len(tries) == 0 || tries[0] > settling+2+splitFirstGap {
		t.Fatalf("tries of one core at %v: want the first within %d runs of the %d that settled it", tries, 2+splitFirstGap, settling)
	}
	gap := splitFirstGap
	for k := 1; k < len(tries); k++ {
		gap = min(2*gap, splitProbe*splitFarProbe)
		if d := tries[k] - tries[k-1]; d != gap+2 {
			t.Fatalf("tries of one core at %v: try %d %d runs after the last, want %d", tries, k, d, gap+2)
		}
	}
	if len(tries) < 8 || gap != splitProbe*splitFarProbe {
		t.Fatalf("tries of one core at %v: want the gap to reach %d", tries, splitProbe*splitFarProbe)
	}
}

// TestSplitStatsConfirmsFasterProbe: a choice settled on a slow start
// (splitting slowed at first, one core three times as fast) follows the
// first probe that beats it: the probed way runs splitWindow-1 more timed
// runs at once, and with its window of fresh times it is chosen, within
// a few runs of the probe rather than after probes hundreds of runs
// apart, and the first probe comes within ten runs of the choice
// settling. A probe the choice would not prefer is not run again.
func TestSplitStatsConfirmsFasterProbe(t *testing.T) {
	ms := time.Millisecond
	s := newStats(2)
	simulate(s, 2*2*splitSettle, []time.Duration{3 * ms / 2, 3 * ms / 2}, []time.Duration{ms / 2, ms / 2})
	if !s.settled() || s.chosen != wayOne {
		t.Fatalf("split at 3 ms, one core at 1: settled %v, chose way %d", s.settled(), s.chosen)
	}
	// Splitting now runs at 0.5 ms a run.
	var taken []int
	for s.chosen != waySplit && len(taken) < 4*splitProbe*splitFarProbe {
		w, _ := simulate(s, 1, []time.Duration{ms / 4, ms / 4}, []time.Duration{ms / 2, ms / 2})
		taken = append(taken, w...)
	}
	probe := slices.Index(taken, waySplit)
	if s.chosen != waySplit || probe < 0 {
		t.Fatalf("after %d runs with splitting fastest the choice is way %d", len(taken), s.chosen)
	}
	if probe > 10 {
		t.Fatalf("the first probe of splitting ran %d runs after the choice settled, want at most 10", probe)
	}
	if want := probe + 2 + splitWindow - 1; len(taken) > want {
		t.Fatalf("the first probe ran at run %d and the choice changed after run %d, want by run %d (ways %v)", probe, len(taken), want, taken[probe:min(len(taken), probe+2*splitWindow)])
	}
	// One core gets four times as fast, split a little slower (0.75 ms,
	// still under one core's 1 ms of its window): only a probe of one
	// core shows it, and the choice follows once it is confirmed.
	taken = taken[:0]
	for s.chosen != wayOne && len(taken) < 4*splitProbe*splitFarProbe {
		w, _ := simulate(s, 1, []time.Duration{3 * ms / 8, 3 * ms / 8}, []time.Duration{ms / 8, ms / 8})
		taken = append(taken, w...)
	}
	if s.chosen != wayOne {
		t.Fatalf("after %d runs with one core fastest the choice is way %d", len(taken), s.chosen)
	}
	if c := len(taken) - slices.Index(taken, wayOne); c > 1+splitWindow {
		t.Fatalf("%d runs from one core's probe to the choice moving, want at most %d (the probe's two and its confirmations)", c, 1+splitWindow)
	}
}

// TestSplitTunerTimesLoneRunsOnly checks that runs overlapping another run
// on the engine, of the model or another, are not timed, and that runs of
// sizes beyond splitSizes split untuned.
func TestSplitTunerTimesLoneRunsOnly(t *testing.T) {
	exec := gemm.New(dispatch.Default(), 2)
	defer exec.Close()
	g := new(graph)
	tu := newSplitTuner(exec, 0)
	_, done1 := tu.begin(g, 10)
	_, done2 := tu.begin(g, 10)
	done2(time.Millisecond, true)
	done1(time.Millisecond, true)
	other := newSplitTuner(exec, 0) // another model on the same engine
	_, done1 = tu.begin(g, 10)
	_, done2 = other.begin(g, 20)
	done1(time.Millisecond, true)
	done2(time.Millisecond, true)
	_, done3 := tu.begin(g, 10) // alone, but ended with an error
	done3(time.Millisecond, false)
	if n := tu.sizes[10].times[waySplit].n + other.sizes[20].times[waySplit].n; n != 0 {
		t.Fatalf("%d overlapping or failed runs were timed", n)
	}
	_, done := tu.begin(g, 10)
	done(time.Millisecond, true)
	if n := tu.sizes[10].times[waySplit].n; n != 1 {
		t.Fatalf("a lone run was not timed (%d timed)", n)
	}
	for size := range splitSizes + 10 {
		plan, done := tu.begin(g, 1000+size)
		if slices.Contains(plan.one, true) {
			t.Fatalf("the first run of size %d took one core, want split", 1000+size)
		}
		done(time.Millisecond, true)
	}
	if len(tu.sizes) != splitSizes {
		t.Fatalf("the tuner holds %d sizes, want at most %d", len(tu.sizes), splitSizes)
	}
}

// splitMaxRuns bounds the runs TestSplitWaysSameAnswer gives a tuner to
// decide: split and one core take 19 runs to have five timed runs each
// (every one after an untimed first) and mixed 6 more, but on a busy
// machine a clear choice may become unclear again and ask for more.
const splitMaxRuns = 400

// decided reports whether m has chosen how to run inputs of elems values.
func decided(m *Model, elems int) bool {
	for _, c := range m.SplitChoices() {
		if c.Elements == elems {
			return c.Decided
		}
	}
	return false
}

// TestSplitWaysSameAnswer runs PaddleOCR (int8 and float32) on an engine of
// two threads until the tuner has decided at two batch sizes, and
// checks every run's output bit for bit against the same model on one
// thread: the way a run takes never changes its answer. Its batches run
// whole (WholeBatches): by parts they would not meet the split tuner.
func TestSplitWaysSameAnswer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "models"), "paddleocr_cls_mobile_v2", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if data, err = cnnDynamicBatch(data); err != nil {
		t.Fatal(err)
	}
	two := gemm.New(dispatch.Default(), 2)
	defer two.Close()
	one := gemm.New(dispatch.Default(), 1)
	defer one.Close()
	for _, q := range []bool{true, false} {
		opts := Options{Quantize: q, Scheme: quant.PerChannel, WholeBatches: true}
		opts.Exec = two
		m, err := LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Exec = one
		ref, err := LoadWith(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		if ref.SplitChoices() != nil {
			t.Fatal("a model on one thread has split choices")
		}
		name := m.Inputs[0].Name
		for _, batch := range []int{1, 2} {
			shape := []int{batch, 3, 48, 192}
			x := make([]float32, batch*3*48*192)
			r := rand.New(rand.NewPCG(uint64(batch), 5))
			for i := range x {
				x[i] = r.Float32()*2 - 1
			}
			in := map[string]*tensor.Tensor{name: tensor.From(shape, x)}
			want, err := ref.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for run := 0; run < splitMaxRuns && !decided(m, len(x)); run++ {
				got, err := m.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, w := range want {
					g := got[k].Data.([]float32)
					for i, v := range w.Data.([]float32) {
						if math.Float32bits(g[i]) != math.Float32bits(v) {
							t.Fatalf("int8 %v batch %d run %d: %s[%d] = %v on two threads, %v on one", q, batch, run, k, i, g[i], v)
						}
					}
				}
			}
		}
		choices := m.SplitChoices()
		if len(choices) != 2 {
			t.Fatalf("int8 %v: split choices for %d sizes, want 2: %+v", q, len(choices), choices)
		}
		for _, c := range choices {
			if !c.Decided || c.Split <= 0 || c.OneCore <= 0 {
				t.Fatalf("int8 %v: after %d lone runs the choice is not made: %+v", q, splitMaxRuns, c)
			}
		}
	}
}

// TestSplitStepTimes runs a chain of three Relu steps on an engine of
// two threads and checks that the runs the tuner times record a time for
// every step, which the mixed way's plan is made of, and that the runs
// it does not time read no clock a step (they have no step times).
func TestSplitStepTimes(t *testing.T) {
	exec := gemm.New(dispatch.Default(), 2)
	defer exec.Close()
	io := func(name string) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}
	}
	g := &onnxpb.Graph{Inputs: []*onnxpb.ValueInfo{io("x")}, Outputs: []*onnxpb.ValueInfo{io("y")}}
	for i, out := range []string{"a", "b", "y"} {
		in := []string{"x", "a", "b"}[i]
		g.Nodes = append(g.Nodes, &onnxpb.Node{OpType: "Relu", Name: out, Inputs: []string{in}, Outputs: []string{out}})
	}
	m, err := LoadWith(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}}, Graph: g}), Options{Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	if m.split == nil || len(m.steps) != 3 {
		t.Fatalf("a model of %d steps on two threads, tuner %v", len(m.steps), m.split != nil)
	}
	x := tensor.From([]int{4, 64}, make([]float32, 256))
	timed, untimed := 0, 0
	for range 40 {
		plan, done := m.split.begin(&m.graph, x.Len())
		vals, err := m.graph.execute(context.WithValue(context.Background(), planKey{}, plan), []*tensor.Tensor{x}, nil, nil)
		done(time.Millisecond, err == nil)
		if err != nil || len(vals) == 0 {
			t.Fatalf("run: %v", err)
		}
		if plan.took == nil { // the run times no step
			untimed++
			continue
		}
		timed++
		for i, d := range plan.took {
			if d <= 0 {
				t.Fatalf("a run timing its steps took %v at step %d of %d", d, i, len(plan.took))
			}
		}
	}
	if timed == 0 || untimed == 0 {
		t.Fatalf("%d runs timed, %d not: the test saw only one kind", timed, untimed)
	}
}
