package model_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/internal/shareddata"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// traceOutputs runs m keeping every value (a trace: no value's memory is
// reused) and returns its outputs by name: the answer of a run without
// the memory plan.
func traceOutputs(t *testing.T, m *model.Model, in map[string]*tensor.Tensor) map[string][]float32 {
	t.Helper()
	vals, err := m.Trace(context.Background(), in)
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	out := map[string][]float32{}
	for i, spec := range m.Outputs {
		out[spec.Name] = slices.Clone(vals[m.OutputSlot(i)].Data.([]float32))
	}
	return out
}

// firstBitDiff reports the first element where got and want differ in their
// bits, or -1.
func firstBitDiff(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// checkRuns runs m rounds times on each input, one after another and
// then from several goroutines at once, and requires every output to be
// bit-identical to a run without the plan; the outputs of every run are
// checked again at the end, after all the runs that came later.
func checkRuns(t *testing.T, m *model.Model, inputs []map[string]*tensor.Tensor, rounds int) {
	t.Helper()
	want := make([]map[string][]float32, len(inputs))
	for i, in := range inputs {
		want[i] = traceOutputs(t, m, in)
	}
	type result struct {
		input int
		out   map[string]*tensor.Tensor
	}
	var mu sync.Mutex
	var kept []result
	check := func(i int, out map[string]*tensor.Tensor, when string) error {
		for name, w := range want[i] {
			got, ok := out[name]
			if !ok {
				return fmt.Errorf("%s: output %q missing", when, name)
			}
			if n, err := tensor.NumElements(got.Shape); err != nil || n != len(w) {
				return fmt.Errorf("%s: input %d: output %q has shape %v for %d values", when, i, name, got.Shape, len(w))
			}
			if j := firstBitDiff(got.Data.([]float32), w); j >= 0 {
				return fmt.Errorf("%s: input %d: output %q differs from a run without the plan at %d", when, i, name, j)
			}
		}
		return nil
	}
	run := func(i int) error {
		out, err := m.Run(context.Background(), inputs[i], nil)
		if err != nil {
			return err
		}
		if err := check(i, out, "run"); err != nil {
			return err
		}
		mu.Lock()
		kept = append(kept, result{i, out})
		mu.Unlock()
		return nil
	}
	for range rounds {
		for i := range inputs {
			if err := run(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	errs := make(chan error, 4*rounds*len(inputs))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range rounds * len(inputs) {
				if err := run((g + r) % len(inputs)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range kept {
		if err := check(r.input, r.out, "after the later runs"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlanEncoderRepeatable runs the encoder of internal/onnxbuild again
// and again, in float32 and with int8 weights, at batch 1 and 2 in turn
// (so buffers change size classes between runs) and concurrently: every
// answer is bit-identical to a run that reuses no memory, and no output
// changes once later runs reuse the run's buffers.
func TestPlanEncoderRepeatable(t *testing.T) {
	data := onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes()
	inputs := []map[string]*tensor.Tensor{
		{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 1, 3)},
		{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 2, 5)},
	}
	for _, c := range []struct {
		name string
		opts model.Options
	}{
		{"float32", model.Options{}},
		{"int8", model.Options{Quantize: true, Scheme: quant.PerChannel}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := model.LoadWith(data, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkRuns(t, m, inputs, 2)
		})
	}
}

// TestPlanSharedModels does the same for the real models in
// ../shared/models, on their first test data set, with int8 weights (the
// default); the short run keeps the small ones.
func TestPlanSharedModels(t *testing.T) {
	root := shareddata.Dir(t, "models")
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "model.onnx"))
	if len(dirs) == 0 {
		t.Fatalf("no models in %s", root)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			switch {
			case name == "onnx_light_vgg19":
				t.Skip("VGG-19's runs take a minute; ResNet-50 and DenseNet-121 run the same operators")
			case (testing.Short() || planRace) && strings.HasPrefix(name, "onnx_light_") && name != "onnx_light_squeezenet" && name != "onnx_light_resnet50":
				t.Skip("a large ImageNet architecture: runs without -short and -race")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Tensor{}
			for i, spec := range m.Inputs {
				in[spec.Name] = readTensor(t, filepath.Join(dir, "test_data_set_0", fmt.Sprintf("input_%d.pb", i)))
			}
			checkRuns(t, m, []map[string]*tensor.Tensor{in}, 1)
		})
	}
}

// ramp returns n float32 values around zero, no two alike.
func ramp(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * float32(i-n/3)
	}
	return v
}

// TestPlanKeepsViewsAlive: r = Relu(x) dies at the Reshape that views it,
// but the view v is read two nodes later; the Add in between makes an
// output of r's size class, which must not take r's memory. y = v + 2x
// (reshaped) holds relu(x) + 2x.
func TestPlanKeepsViewsAlive(t *testing.T) {
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 16, 64)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 64, 16)},
		Inits:   map[string]*tensor.Tensor{"shape": tensor.From([]int{2}, []int64{64, 16})},
		Nodes: []onnxbuild.Node{
			{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{Op: "Reshape", Inputs: []string{"r", "shape"}, Outputs: []string{"v"}},
			{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"d"}},
			{Op: "Reshape", Inputs: []string{"d", "shape"}, Outputs: []string{"e"}},
			{Op: "Add", Inputs: []string{"v", "e"}, Outputs: []string{"y"}},
		},
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for run := range 3 {
		x := ramp(16*64, float32(run+1)*0.25)
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{16, 64}, x)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := out["y"].Data.([]float32)
		for i, v := range x {
			if want := max(v, 0) + (v + v); y[i] != want {
				t.Fatalf("run %d: y[%d] = %v, want relu(%v) + 2·%v = %v", run, i, y[i], v, v, want)
			}
		}
	}
}

// TestPlanNeverRecyclesOutputs: the graph returns a view of a value that
// dies inside it (o1 = Reshape(Relu(x))) and a value made after it of the
// same size class (o2); later runs reuse the runs' dead buffers, never
// the outputs a caller holds.
func TestPlanNeverRecyclesOutputs(t *testing.T) {
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 16, 64)},
		Outputs: []onnxbuild.IO{onnxbuild.V("o1", tensor.Float32, 64, 16), onnxbuild.V("o2", tensor.Float32, 16, 64)},
		Inits:   map[string]*tensor.Tensor{"shape": tensor.From([]int{2}, []int64{64, 16})},
		Nodes: []onnxbuild.Node{
			{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{Op: "Reshape", Inputs: []string{"r", "shape"}, Outputs: []string{"o1"}},
			{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"d"}},
			{Op: "Add", Inputs: []string{"d", "x"}, Outputs: []string{"t"}},
			{Op: "Add", Inputs: []string{"t", "x"}, Outputs: []string{"o2"}},
		},
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	type held struct {
		x      []float32
		o1, o2 []float32
	}
	var runs []held
	for run := range 4 {
		x := ramp(16*64, float32(run+1)*0.5)
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{16, 64}, x)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, held{x, out["o1"].Data.([]float32), out["o2"].Data.([]float32)})
		for k, h := range runs {
			for i, v := range h.x {
				if h.o1[i] != max(v, 0) || h.o2[i] != v+v+v+v {
					t.Fatalf("after run %d: run %d's outputs at %d are %v, %v; want %v, %v", run, k, i, h.o1[i], h.o2[i], max(v, 0), v+v+v+v)
				}
			}
		}
	}
}

// TestPlanOutputHeadersOutliveRuns: a convolution's output (Relu fused:
// a step's Single, which the run's arena hands out again in its next
// run) and a global pool's over it are the graph's outputs. Runs at
// batch 1 and 2 in turn, one after another and at once: every output a
// caller holds keeps its shape and values after the runs that came
// later.
func TestPlanOutputHeadersOutliveRuns(t *testing.T) {
	w := ramp(8*4*3*3, 0.01)
	g := onnxbuild.Graph{
		Opset:   17,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4, 8, 8)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 8, 8, 8), onnxbuild.V("p", tensor.Float32, -1, 8, 1, 1)},
		Inits:   map[string]*tensor.Tensor{"w": tensor.From([]int{8, 4, 3, 3}, w)},
		Nodes: []onnxbuild.Node{
			{Op: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("pads", 1, 1, 1, 1)}},
			{Op: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}},
			{Op: "GlobalAveragePool", Inputs: []string{"y"}, Outputs: []string{"p"}},
		},
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Steps(); st[0].Op != "FusedConv" {
		t.Fatalf("the first step is %s, want FusedConv", st[0].Op)
	}
	var inputs []map[string]*tensor.Tensor
	for i, n := range []int{1, 2, 1, 2} {
		inputs = append(inputs, map[string]*tensor.Tensor{"x": tensor.From([]int{n, 4, 8, 8}, ramp(n*4*64, float32(i+1)*0.25))})
	}
	checkRuns(t, m, inputs, 3)
}

// bytesPerRun returns the bytes run allocates per call, over n calls.
func bytesPerRun(n int, run func()) uint64 {
	run()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		run()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// TestPlanEncoderBytes measures the memory a run of the encoder (int8,
// batch 1) allocates with the plan against a run without it (a trace,
// which reuses nothing): the plan must save at least half of it (it
// saves about three quarters: 7.1 MB a run down to 1.8 MB).
func TestPlanEncoderBytes(t *testing.T) {
	if planRace {
		t.Skip("the race detector makes sync.Pool drop what it is given")
	}
	m, err := model.LoadWith(onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 1, 3)}
	ctx := context.Background()
	plan := bytesPerRun(5, func() {
		if _, err := m.Run(ctx, in, nil); err != nil {
			t.Fatal(err)
		}
	})
	none := bytesPerRun(5, func() {
		if _, err := m.Trace(ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("bytes a run: %d with the plan, %d without (%.0f%% saved)", plan, none, 100-100*float64(plan)/float64(none))
	if plan > none/2 {
		t.Errorf("a run allocates %d bytes with the plan, %d without: the plan saves less than half", plan, none)
	}
}

// bodyValue is a value of a Loop body: a tensor of type dt, shape unknown.
func bodyValue(name string, dt onnxpb.DataType) *onnxpb.ValueInfo {
	return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: dt}}
}

// TestPlanLoopBody: a Loop body reads r, a value of the enclosing graph
// made from the arena of its run, and returns values made from its own;
// r is read again after the Loop. Each body run recycles its own dead
// values and never the captured r, the values it passes to the next
// iteration or the scan outputs the Loop stacks.
func TestPlanLoopBody(t *testing.T) {
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{bodyValue("i", onnxpb.Int64), bodyValue("c", onnxpb.Bool), bodyValue("v", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{OpType: "Add", Inputs: []string{"v", "r"}, Outputs: []string{"a"}},
			{OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{OpType: "Add", Inputs: []string{"b", "r"}, Outputs: []string{"v2"}},
			{OpType: "Add", Inputs: []string{"b", "b"}, Outputs: []string{"s"}},
		},
		Outputs: []*onnxpb.ValueInfo{bodyValue("c2", onnxpb.Bool), bodyValue("v2", onnxpb.Float), bodyValue("s", onnxpb.Float)},
	}
	const n, trips = 1024, 3
	g := onnxbuild.Graph{
		Opset:   21,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n)},
		Outputs: []onnxbuild.IO{onnxbuild.V("z", tensor.Float32, n), onnxbuild.V("y", tensor.Float32, trips, n)},
		Inits:   map[string]*tensor.Tensor{"trips": tensor.Scalar(int64(trips))},
		Nodes: []onnxbuild.Node{
			{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{Op: "Loop", Inputs: []string{"trips", "", "x"}, Outputs: []string{"last", "y"},
				Attrs: []*onnxpb.Attribute{{Name: "body", Type: onnxpb.AttrGraph, G: body}}},
			{Op: "Add", Inputs: []string{"last", "r"}, Outputs: []string{"z"}},
		},
	}
	m, err := model.Load(g.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	type held struct{ z, y, wantZ, wantY []float32 }
	var runs []held
	for run := range 4 {
		x := ramp(n, float32(run+1)*0.125)
		r := make([]float32, n)
		v := slices.Clone(x)
		var wantY []float32
		for i := range x {
			r[i] = max(x[i], 0)
		}
		for range trips {
			s := make([]float32, n)
			for i := range v {
				b := max(v[i]+r[i], 0)
				s[i], v[i] = b+b, b+r[i]
			}
			wantY = append(wantY, s...)
		}
		for i := range v {
			v[i] += r[i]
		}
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{n}, x)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, held{out["z"].Data.([]float32), out["y"].Data.([]float32), v, wantY})
		for k, h := range runs {
			if i := firstBitDiff(h.z, h.wantZ); i >= 0 {
				t.Fatalf("after run %d: run %d's z[%d] = %v, want %v", run, k, i, h.z[i], h.wantZ[i])
			}
			if i := firstBitDiff(h.y, h.wantY); i >= 0 {
				t.Fatalf("after run %d: run %d's y[%d] = %v, want %v", run, k, i, h.y[i], h.wantY[i])
			}
		}
	}
}
