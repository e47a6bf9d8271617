package model_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestProfileRecordsEveryStep: a profiled run of the encoder on one
// thread records each step of the graph once per run, under its operator;
// its products (8 M multiply-adds and more) spend time in work that
// splits, no more than the step took, its views none; the serial
// fraction is the time outside such work. The answer is the unprofiled run's.
func TestProfileRecordsEveryStep(t *testing.T) {
	c := onnxbuild.DefaultEncoder
	e := gemm.New(dispatch.Default(), 1)
	defer e.Close()
	m, err := model.LoadWith(onnxbuild.Encoder(c).Bytes(), model.Options{Exec: e, Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{m.Inputs[0].Name: onnxbuild.EncoderInput(c, 1, 3)}
	want, err := m.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p model.Profile
	const runs = 2
	for range runs {
		got, err := m.Run(model.WithProfile(context.Background(), &p), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			if !tensorsEqual(got[name], w) {
				t.Fatalf("output %s differs under a profile", name)
			}
		}
	}
	steps := m.Steps()
	nodes := p.Nodes()
	if len(nodes) != len(steps) {
		t.Fatalf("the profile has %d nodes, the model %d steps", len(nodes), len(steps))
	}
	var total, par int64
	for i, n := range nodes {
		if n.Node != steps[i].Name || n.Op != steps[i].Op || n.Runs != runs {
			t.Errorf("node %d: %+v, want %s (%s) run %d times", i, n, steps[i].Name, steps[i].Op, runs)
		}
		switch n.Op {
		case "MatMul", "Gemm", "FusedLinear":
			if n.Parallel <= 0 || n.Parallel > n.Time {
				t.Errorf("%s (%s): %v of %v counted as work that splits", n.Node, n.Op, n.Parallel, n.Time)
			}
		case "Reshape", "Shape", "Unsqueeze": // views and metadata: no loop
			if n.Parallel != 0 {
				t.Errorf("%s (%s) counted as work that splits", n.Node, n.Op)
			}
		}
		total += int64(n.Time)
		par += int64(n.Parallel)
	}
	if par == 0 || par == total {
		t.Errorf("parallel %d of %d ns: want some of each", par, total)
	}
	if got, want := p.SerialFraction(), float64(total-par)/float64(total); got != want {
		t.Errorf("SerialFraction = %v, want %v", got, want)
	}
	byOp := p.ByOp()
	var sum int64
	for i, o := range byOp {
		sum += int64(o.Time)
		if i > 0 && o.Time > byOp[i-1].Time {
			t.Errorf("ByOp is not sorted by time at %d", i)
		}
	}
	if sum != total {
		t.Errorf("ByOp sums to %d ns, the nodes to %d", sum, total)
	}
}

// TestProfileLabelsCPUSamples: the CPU samples of a run profiled with
// Labels carry the step they ran in as pprof labels (node, op), so a Go
// CPU profile splits by node; an unprofiled run's carry none, nor do a
// run's profiled for times alone.
func TestProfileLabelsCPUSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("samples a CPU profile for a few hundred milliseconds")
	}
	e := gemm.New(dispatch.Default(), 1)
	defer e.Close()
	m, err := model.LoadWith(onnxbuild.MLP([]int{512, 512, 512}, 1).Bytes(), model.Options{Exec: e})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 64*512)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{64, 512}, x)}
	sample := func(ctx context.Context) []byte {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Skipf("a CPU profile is already running: %v", err)
		}
		for t0 := time.Now(); time.Since(t0) < 300*time.Millisecond; {
			if _, err := m.Run(ctx, in, nil); err != nil {
				pprof.StopCPUProfile()
				t.Fatal(err)
			}
		}
		pprof.StopCPUProfile()
		zr, err := gzip.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	gemmStep := ""
	for _, s := range m.Steps() {
		if strings.Contains(s.Op, "Gemm") || strings.Contains(s.Op, "Linear") {
			gemmStep = s.Name
			break
		}
	}
	if gemmStep == "" {
		t.Fatalf("no product among the steps %+v", m.Steps())
	}
	// The profile's string table holds a label's key and value once a
	// sample carries it.
	if raw := sample(model.WithProfile(context.Background(), &model.Profile{Labels: true})); !bytes.Contains(raw, []byte("node")) || !bytes.Contains(raw, []byte(gemmStep)) {
		t.Errorf("a run profiled with labels: its CPU samples carry no label node=%s", gemmStep)
	}
	if raw := sample(context.Background()); bytes.Contains(raw, []byte(gemmStep)) {
		t.Errorf("an unprofiled run's CPU samples carry the label node=%s", gemmStep)
	}
	if raw := sample(model.WithProfile(context.Background(), new(model.Profile))); bytes.Contains(raw, []byte(gemmStep)) {
		t.Errorf("a run profiled for times alone: its CPU samples carry the label node=%s", gemmStep)
	}
}
