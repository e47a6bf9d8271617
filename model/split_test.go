package model

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestSplitStatsChooses walks one input size's choice through the runs:
// alternating until both ways have splitWindow timed runs, then the
// faster way with a probe of the other every splitProbe runs, and a new
// choice once the probes show the other way faster.
func TestSplitStatsChooses(t *testing.T) {
	var s splitStats
	ms := time.Millisecond
	cost := func(serial bool) time.Duration { // split 1 ms, one core 0.7 ms
		if serial {
			return 7 * ms / 10
		}
		return ms
	}
	var ways []bool
	for range 2 * splitWindow {
		w := s.next()
		ways = append(ways, w)
		s.record(w, cost(w))
	}
	for i, w := range ways {
		if w != (i%2 == 1) {
			t.Fatalf("exploring runs took ways %v, want split and one core alternating from split", ways)
		}
	}
	if !s.serial {
		t.Fatal("one core at 0.7 ms against split at 1 ms: the choice stayed split")
	}
	probes := 0
	for range 4 * splitProbe {
		w := s.next()
		if !w {
			probes++
		}
		s.record(w, cost(w))
	}
	if probes != 4 {
		t.Fatalf("%d runs split in %d after the choice, want one every %d", probes, 4*splitProbe, splitProbe)
	}
	// The host changes: splitting now takes 0.4 ms. The probes see it and,
	// once they are the median of the window, the choice follows.
	cost = func(serial bool) time.Duration {
		if serial {
			return 7 * ms / 10
		}
		return 4 * ms / 10
	}
	runs := 0
	for s.serial && runs < 10*splitProbe {
		w := s.next()
		s.record(w, cost(w))
		runs++
	}
	if s.serial {
		t.Fatalf("after %d runs with splitting faster, the choice is still one core", runs)
	}
	if want := splitProbe * (splitWindow/2 + 1); runs > want {
		t.Fatalf("the choice changed after %d runs, want at most %d", runs, want)
	}
	for range 3 * splitProbe {
		if w := s.next(); w && s.runs%splitProbe != 0 {
			t.Fatalf("run %d took one core, chosen split", s.runs)
		}
	}
}

// TestSplitTunerTimesLoneRunsOnly checks that runs overlapping another run
// on the engine, of the model or another, are not timed, and that runs of
// sizes beyond splitSizes split untuned.
func TestSplitTunerTimesLoneRunsOnly(t *testing.T) {
	exec := gemm.New(dispatch.Default(), 2)
	defer exec.Close()
	tu := newSplitTuner(exec)
	_, done1 := tu.begin(10)
	_, done2 := tu.begin(10)
	done2(time.Millisecond, true)
	done1(time.Millisecond, true)
	other := newSplitTuner(exec) // another model on the same engine
	_, done1 = tu.begin(10)
	_, done2 = other.begin(20)
	done1(time.Millisecond, true)
	done2(time.Millisecond, true)
	if s := other.sizes[20]; s.timed != [2]int{} {
		t.Fatalf("a run beside another model's was timed: %v", s.timed)
	}
	_, done3 := tu.begin(10) // alone, but ended with an error
	done3(time.Millisecond, false)
	if s := tu.sizes[10]; s.timed != [2]int{} {
		t.Fatalf("overlapping or failed runs were timed: %v", s.timed)
	}
	_, done := tu.begin(10)
	done(time.Millisecond, true)
	if s := tu.sizes[10]; s.timed[0]+s.timed[1] != 1 {
		t.Fatalf("a lone run was not timed: %v", s.timed)
	}
	for size := range splitSizes + 10 {
		serial, done := tu.begin(1000 + size)
		if serial {
			t.Fatalf("the first run of size %d took one core, want split", 1000+size)
		}
		done(time.Millisecond, true)
	}
	if len(tu.sizes) != splitSizes {
		t.Fatalf("the tuner holds %d sizes, want at most %d", len(tu.sizes), splitSizes)
	}
}

// TestSplitWaysSameAnswer runs PaddleOCR (int8 and float32) on an engine of
// two threads until the tuner has timed both ways at two batch sizes, and
// checks every run's output bit for bit against the same model on one
// thread: the way a run takes never changes its answer.
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
		opts := Options{Quantize: q, Scheme: quant.PerChannel}
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
			for run := range 2*splitWindow + 1 {
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
			if !c.Decided || c.Split <= 0 || c.Serial <= 0 {
				t.Fatalf("int8 %v: after %d lone runs the choice is not made: %+v", q, 2*splitWindow+1, c)
			}
		}
	}
}
