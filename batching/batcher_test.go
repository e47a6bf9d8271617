package batching

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// mixedGraph is a model whose layers run on the int8 kernels and on the
// float kernels, with row-wise operators between them and two inputs of
// two datatypes:
//
//	h = Relu(Gemm(x, W1 256×96, b1))                 int8 (24,576 weights)
//	z = LayerNormalization(h) · W2 (96×16) + b2      float32 (1,536 weights)
//	y = Softmax(z · Cast(mask))                      mask INT64 [N, 16]
//
// outputs y [N, 16] and h [N, 96].
func mixedGraph() onnxbuild.Graph {
	r := rand.New(rand.NewPCG(7, 8))
	param := func(scale float64, shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return tensor.From(shape, v)
	}
	ones := make([]float32, 96)
	for i := range ones {
		ones[i] = 1
	}
	return onnxbuild.Graph{
		Opset:   17,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 256), onnxbuild.V("mask", tensor.Int64, -1, 16)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 16), onnxbuild.V("h", tensor.Float32, -1, 96)},
		Inits: map[string]*tensor.Tensor{
			"w1": param(1/16.0, 256, 96), "b1": param(0.1, 96),
			"gamma": tensor.From([]int{96}, ones), "beta": param(0.1, 96),
			"w2": param(0.1, 96, 16), "b2": param(0.1, 16),
		},
		Nodes: []onnxbuild.Node{
			{Op: "Gemm", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"g"}},
			{Op: "Relu", Inputs: []string{"g"}, Outputs: []string{"h"}},
			{Op: "LayerNormalization", Inputs: []string{"h", "gamma", "beta"}, Outputs: []string{"n"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", -1)}},
			{Op: "MatMul", Inputs: []string{"n", "w2"}, Outputs: []string{"p"}},
			{Op: "Add", Inputs: []string{"p", "b2"}, Outputs: []string{"z"}},
			{Op: "Cast", Inputs: []string{"mask"}, Outputs: []string{"mf"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("to", 1)}},
			{Op: "Mul", Inputs: []string{"z", "mf"}, Outputs: []string{"zm"}},
			{Op: "Softmax", Inputs: []string{"zm"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", -1)}},
		},
	}
}

func loadModel(t *testing.T, g onnxbuild.Graph, tb *dispatch.Table) *model.Model {
	t.Helper()
	exec := gemm.New(tb, 1)
	t.Cleanup(exec.Close)
	m, err := model.LoadWith(g.Bytes(), model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mixedInputs returns a request of rows rows.
func mixedInputs(rng *rand.Rand, rows int) map[string]*tensor.Tensor {
	x := make([]float32, rows*256)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	mask := make([]int64, rows*16)
	for i := range mask {
		mask[i] = int64(rng.IntN(3))
	}
	return map[string]*tensor.Tensor{"x": tensor.From([]int{rows, 256}, x), "mask": tensor.From([]int{rows, 16}, mask)}
}

// sameOutputs fails unless got holds exactly want's outputs, bit for bit.
func sameOutputs(t *testing.T, what string, got, want map[string]*tensor.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		g := got[name]
		if g == nil {
			t.Fatalf("%s: no output %q", what, name)
		}
		if !tensor.SameBits(g, w) {
			t.Fatalf("%s: output %q differs from the request run alone:\n got %v %v\nwant %v %v", what, name, g.Shape, head(g), w.Shape, head(w))
		}
	}
}

func head(t *tensor.Tensor) any {
	if d, ok := t.Data.([]float32); ok && len(d) > 8 {
		return d[:8]
	}
	return t.Data
}

// submit runs each request on its own goroutine and returns the answers
// in request order.
func submit(b *Batcher, ctx context.Context, reqs []map[string]*tensor.Tensor, outputs [][]string) ([]map[string]*tensor.Tensor, []error) {
	outs := make([]map[string]*tensor.Tensor, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var names []string
			if outputs != nil {
				names = outputs[i]
			}
			outs[i], errs[i] = b.Run(ctx, reqs[i], names)
		}()
	}
	wg.Wait()
	return outs, errs
}

// waitQueued waits until n requests are in b's queue.
func waitQueued(t *testing.T, b *Batcher, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for b.Stats().Waiting != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", b.Stats().Waiting, n)
		}
		time.Sleep(time.Millisecond) // polling for a state, not timing anything
	}
}

// TestBatchedBitIdentical stacks requests of 1 to 5 rows into one batch
// on every kernel table and checks each answer against the same request
// run alone, bit for bit, through int8 and float32 layers.
func TestBatchedBitIdentical(t *testing.T) {
	for _, tb := range dispatch.Available() {
		t.Run(tb.String(), func(t *testing.T) {
			m := loadModel(t, mixedGraph(), tb)
			kinds := map[string]bool{}
			for _, l := range m.Layers {
				kinds[strings.Fields(l.Kernels)[0]] = true
			}
			if !kinds["int8"] || !kinds["float32"] {
				t.Fatalf("layers %+v: want int8 and float32 layers", m.Layers)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(tb.String()))))
			sizes := []int{1, 3, 1, 2, 5, 1, 4, 1, 1, 2}
			total := 0
			reqs := make([]map[string]*tensor.Tensor, len(sizes))
			for i, n := range sizes {
				reqs[i] = mixedInputs(rng, n)
				total += n
			}
			outputs := make([][]string, len(sizes))
			outputs[2] = []string{"h"}
			outputs[5] = []string{"y"}
			// A delay longer than any test: the batch goes when it is full,
			// that is when every request has arrived.
			b, err := New(m, Config{MaxBatchSize: total, Dynamic: true, MaxQueueDelay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			got, errs := submit(b, context.Background(), reqs, outputs)
			for i := range reqs {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				want, err := m.Run(context.Background(), reqs[i], outputs[i])
				if err != nil {
					t.Fatal(err)
				}
				sameOutputs(t, fmt.Sprintf("request %d (%d rows)", i, sizes[i]), got[i], want)
			}
			st := b.Stats()
			if st.Executions != 1 || len(st.Batches) != 1 || st.Batches[0].Size != total || st.Requests != int64(len(sizes)) || st.Inferences != int64(total) || st.Alone != 0 || st.Queue.Count != int64(len(sizes)) {
				t.Errorf("stats %+v: want one execution of all %d rows", st, total)
			}
		})
	}
}

// TestConcurrentLoadBitIdentical sends many requests from many goroutines
// with no queue delay: batches form from whatever gathered while the last
// one ran, and every answer is still the request's own.
func TestConcurrentLoadBitIdentical(t *testing.T) {
	tb := dispatch.Available()[0]
	m := loadModel(t, mixedGraph(), tb)
	b, err := New(m, Config{MaxBatchSize: 8, Dynamic: true})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i := 0; i < each; i++ {
				in := mixedInputs(rng, 1+rng.IntN(3))
				got, err := b.Run(context.Background(), in, nil)
				if err != nil {
					errc <- err
					return
				}
				want, _ := m.Run(context.Background(), in, nil)
				for name := range want {
					if !tensor.SameBits(got[name], want[name]) {
						errc <- fmt.Errorf("worker %d request %d: output %q differs from the request alone", w, i, name)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	st := b.Stats()
	if st.Requests != workers*each || st.Alone != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestIncompatibleShapesBatchApart: requests whose second dimensions
// differ never share a batch.
func TestIncompatibleShapesBatchApart(t *testing.T) {
	g := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, -1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, -1)},
		Nodes:   []onnxbuild.Node{{Op: "Softmax", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("axis", -1)}}},
	}
	m := loadModel(t, g, dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 4, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var reqs []map[string]*tensor.Tensor
	for _, width := range []int{3, 5, 3, 5, 3, 5, 3, 5} {
		x := make([]float32, width)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		reqs = append(reqs, map[string]*tensor.Tensor{"x": tensor.From([]int{1, width}, x)})
	}
	got, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), got[i], want)
	}
	if st := b.Stats(); st.Executions != 2 || len(st.Batches) != 1 || st.Batches[0].Size != 4 {
		t.Errorf("stats %+v: want two batches of 4", st)
	}
}

// TestPreferredSizeGoesAtOnce: with an hour of queue delay, a batch that
// reaches a preferred size is sent without waiting.
func TestPreferredSizeGoesAtOnce(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 16, Dynamic: true, MaxQueueDelay: time.Hour, PreferredBatchSizes: []int{2, 5}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only bounds a failure
	defer cancel()
	got, errs := submit(b, ctx, []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 1)}, nil)
	if errs[0] != nil || errs[1] != nil || got[0] == nil {
		t.Fatalf("errors %v", errs)
	}
	if st := b.Stats(); st.Executions != 1 || st.Batches[0].Size != 2 || st.Requests != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestQueueDelaySendsPartialBatch: a lone request goes once it has waited
// the queue delay.
func TestQueueDelaySendsPartialBatch(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 16, Dynamic: true, MaxQueueDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	in := mixedInputs(rand.New(rand.NewPCG(2, 2)), 2)
	got, err := b.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Run(context.Background(), in, nil)
	sameOutputs(t, "lone request", got, want)
	if st := b.Stats(); st.Executions != 1 || st.Batches[0].Size != 2 || st.Alone != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestLargerThanMaxRunsAlone: a request of more rows than max_batch_size
// runs by itself, with the same answer.
func TestLargerThanMaxRunsAlone(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 4, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	in := mixedInputs(rand.New(rand.NewPCG(3, 3)), 9)
	got, err := b.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Run(context.Background(), in, nil)
	sameOutputs(t, "9 rows", got, want)
	if st := b.Stats(); st.Alone != 1 || st.Executions != 1 || st.Inferences != 9 || st.Batches[0].Size != 9 {
		t.Errorf("stats %+v", st)
	}
}

// TestBadRequestGetsTheModelsError: a request that cannot stack (a wrong
// shape, a missing input, an unknown output) gets the model's own error.
func TestBadRequestGetsTheModelsError(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 4, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	good := mixedInputs(rand.New(rand.NewPCG(3, 4)), 1)
	cases := []struct {
		in      map[string]*tensor.Tensor
		outputs []string
	}{
		{map[string]*tensor.Tensor{"x": good["x"]}, nil},
		{map[string]*tensor.Tensor{"x": tensor.From([]int{1, 255}, make([]float32, 255)), "mask": good["mask"]}, nil},
		{good, []string{"nope"}},
		{map[string]*tensor.Tensor{"x": good["x"], "mask": tensor.From([]int{1, 15}, make([]int64, 15))}, nil},
	}
	for i, c := range cases {
		_, got := b.Run(context.Background(), c.in, c.outputs)
		_, want := m.Run(context.Background(), c.in, c.outputs)
		if got == nil || want == nil || got.Error() != want.Error() || !errors.Is(got, model.ErrInput) {
			t.Errorf("case %d: error %v, the model alone says %v", i, got, want)
		}
	}
}

// TestQueueFull: past max_queue_size waiting requests, the next is
// refused with ErrQueueFull.
func TestQueueFull(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 64, Dynamic: true, MaxQueueDelay: time.Hour, MaxQueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		in := mixedInputs(rng, 1)
		go func() { _, err := b.Run(ctx, in, nil); done <- err }()
	}
	waitQueued(t, b, 2)
	if _, err := b.Run(context.Background(), mixedInputs(rng, 1), nil); !errors.Is(err, ErrQueueFull) {
		t.Errorf("third request: %v, want ErrQueueFull", err)
	}
	cancel()
	for i := 0; i < 2; i++ {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("queued request: %v, want context.Canceled", err)
		}
	}
	if st := b.Stats(); st.Rejected != 1 || st.Cancelled != 2 || st.Waiting != 0 || st.Executions != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestCancelledInQueueLeaves: a request cancelled while it waits leaves
// the queue; the batch formed later holds only the others, with their own
// answers.
func TestCancelledInQueueLeaves(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 4, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { _, err := b.Run(ctx, mixedInputs(rng, 2), nil); gone <- err }()
	waitQueued(t, b, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 2), mixedInputs(rng, 2)}
	got, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), got[i], want)
	}
	if st := b.Stats(); st.Cancelled != 1 || st.Executions != 1 || st.Batches[0].Size != 4 || st.Requests != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestCancelledInBatchLeaves: a request whose deadline passes while its
// batch runs returns at once; the others get their answers from the same
// execution.
func TestCancelledInBatchLeaves(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 3, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started, resume := make(chan struct{}), make(chan struct{})
	b.beforeRun = func(context.Context) { close(started); <-resume }
	rng := rand.New(rand.NewPCG(6, 6))
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 1), mixedInputs(rng, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		outs map[string]*tensor.Tensor
		err  error
	}
	answers := make([]chan answer, 3)
	for i := range reqs {
		answers[i] = make(chan answer, 1)
		c := context.Background()
		if i == 1 {
			c = ctx
		}
		go func() { o, err := b.Run(c, reqs[i], nil); answers[i] <- answer{o, err} }()
	}
	<-started // the batch of three is executing (held before the model runs)
	cancel()
	if a := <-answers[1]; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("cancelled request: %v", a.err)
	}
	close(resume)
	for _, i := range []int{0, 2} {
		a := <-answers[i]
		if a.err != nil {
			t.Fatal(a.err)
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), a.outs, want)
	}
	if st := b.Stats(); st.Executions != 1 || st.Batches[0].Size != 3 || st.Cancelled != 1 || st.Requests != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestAllLeaveCancelsTheBatch: when every request of a batch has left, the
// execution's context is cancelled, and nothing is counted as executed.
func TestAllLeaveCancelsTheBatch(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 2, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started, resume := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	b.beforeRun = func(context.Context) { close(started); <-resume }
	b.afterRun = func(err error) { finished <- err }
	rng := rand.New(rand.NewPCG(7, 7))
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		in := mixedInputs(rng, 1)
		go func() { _, err := b.Run(ctx, in, nil); errs <- err }()
	}
	<-started
	cancel()
	for i := 0; i < 2; i++ {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("request: %v", err)
		}
	}
	close(resume)
	if err := <-finished; !errors.Is(err, context.Canceled) {
		t.Errorf("the batch ran to %v, want its context cancelled", err)
	}
	if st := b.Stats(); st.Executions != 0 || st.Cancelled != 2 || st.Retried != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestFailedBatchRunsEachAlone: a request whose values the int8 layer
// refuses (NaN) fails its batch; every request then runs alone and gets
// its own answer: the others their outputs, the bad one its error.
func TestFailedBatchRunsEachAlone(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 3, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 1), mixedInputs(rng, 1)}
	reqs[1]["x"].Data.([]float32)[17] = float32(math.NaN())
	got, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		want, werr := m.Run(context.Background(), reqs[i], nil)
		if i == 1 {
			if werr == nil || errs[i] == nil || errs[i].Error() != werr.Error() {
				t.Errorf("bad request: error %v, alone %v", errs[i], werr)
			}
			continue
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		sameOutputs(t, fmt.Sprintf("request %d", i), got[i], want)
	}
	if st := b.Stats(); st.Retried != 3 || st.Alone != 3 || st.Executions != 2 || st.Requests != 3 {
		t.Errorf("stats %+v", st)
	}
}

// rowMixing is y = x - ReduceMean(x over axis 0): shapes keep the batch,
// values mix it.
func rowMixing() onnxbuild.Graph {
	return onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "ReduceMean", Inputs: []string{"x"}, Outputs: []string{"m"}, Attrs: []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{0}}}},
			{Op: "Sub", Inputs: []string{"x", "m"}, Outputs: []string{"y"}},
		},
	}
}

// rowDropping is y = ReduceSum(x over axis 0, keepdims): one row whatever
// the batch.
func rowDropping() onnxbuild.Graph {
	return onnxbuild.Graph{
		Opset:   11,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 4)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, 4)},
		Nodes: []onnxbuild.Node{
			{Op: "ReduceSum", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{{Name: "axes", Type: onnxpb.AttrInts, Ints: []int64{0}}}},
		},
	}
}

// TestCheck: the load-time probe passes row-independent models and refuses
// models that mix, drop or fix the batch dimension.
func TestCheck(t *testing.T) {
	tb := dispatch.Available()[0]
	probed, err := Check(context.Background(), loadModel(t, mixedGraph(), tb))
	if err != nil || !probed {
		t.Errorf("mixed model: probed %v, %v", probed, err)
	}
	probed, err = Check(context.Background(), loadModel(t, onnxbuild.MLP([]int{64, 32, 8}, 1), tb))
	if err != nil || !probed {
		t.Errorf("MLP: probed %v, %v", probed, err)
	}
	for name, g := range map[string]onnxbuild.Graph{"mixing": rowMixing(), "dropping": rowDropping()} {
		probed, err := Check(context.Background(), loadModel(t, g, tb))
		if !probed || !errors.Is(err, ErrNotBatchable) {
			t.Errorf("%s: probed %v, %v; want ErrNotBatchable", name, probed, err)
		}
	}
	fixed := onnxbuild.Identity(tensor.Float32, []int{1, 4})
	m, err := model.Load(fixed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), m); !errors.Is(err, ErrNotBatchable) || !strings.Contains(err.Error(), "dynamic first") {
		t.Errorf("fixed batch dimension: %v", err)
	}
	// A dynamic dimension after the first: nothing to generate, no probe.
	m, err = model.Load(onnxbuild.Identity(tensor.Float32, []int{-1, -1}))
	if err != nil {
		t.Fatal(err)
	}
	if probed, err := Check(context.Background(), m); probed || err != nil {
		t.Errorf("dynamic second dimension: probed %v, %v", probed, err)
	}
}

// TestRowDroppingModelStopsBatching: a model that breaks the contract at
// run time (its outputs lose the batch's rows) stops batching, and every
// request still gets the answer it gets alone.
func TestRowDroppingModelStopsBatching(t *testing.T) {
	m := loadModel(t, rowDropping(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 2, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []map[string]*tensor.Tensor{
		{"x": tensor.From([]int{1, 4}, []float32{1, 2, 3, 4})},
		{"x": tensor.From([]int{1, 4}, []float32{5, 6, 7, 8})},
	}
	got, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), got[i], want)
	}
	if b.Disabled() == nil {
		t.Fatal("batching still on")
	}
	st := b.Stats()
	if st.Disabled == "" || st.Alone != 2 || st.Retried != 2 {
		t.Errorf("stats %+v", st)
	}
	// Later requests run alone at once.
	got2, err := b.Run(context.Background(), reqs[0], nil)
	if err != nil || !slices.Equal(got2["y"].Data.([]float32), []float32{1, 2, 3, 4}) {
		t.Errorf("after: %v %v", got2, err)
	}
}

func TestConfigCheck(t *testing.T) {
	bad := []Config{
		{MaxBatchSize: -1},
		{MaxBatchSize: 4, Dynamic: true, PreferredBatchSizes: []int{8}},
		{MaxBatchSize: 4, Dynamic: true, PreferredBatchSizes: []int{0}},
		{MaxBatchSize: 4, Dynamic: true, MaxQueueSize: -1},
		{MaxBatchSize: 4, Dynamic: true, MaxQueueDelay: -time.Second},
		{Dynamic: true},
	}
	for _, c := range bad {
		if c.Check() == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	if err := (Config{MaxBatchSize: 8, Dynamic: true, PreferredBatchSizes: []int{4, 8}, MaxQueueSize: 10}).Check(); err != nil {
		t.Error(err)
	}
	if (Config{MaxBatchSize: 8}).Enabled() {
		t.Error("max_batch_size without dynamic_batching batches")
	}
}

// TestLargeProductsBitIdentical repeats the check on products large
// enough to be blocked along K and split over two workers, int8 and
// float32, on every kernel table.
func TestLargeProductsBitIdentical(t *testing.T) {
	g := onnxbuild.MLP([]int{2048, 256, 16}, 3)
	for _, tb := range dispatch.Available() {
		for _, quantize := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/int8=%v", tb, quantize), func(t *testing.T) {
				exec := gemm.New(tb, 2)
				t.Cleanup(exec.Close)
				m, err := model.LoadWith(g.Bytes(), model.Options{Exec: exec, Quantize: quantize, Scheme: quant.PerChannel})
				if err != nil {
					t.Fatal(err)
				}
				sizes := []int{1, 7, 1, 3, 12}
				total := 0
				rng := rand.New(rand.NewPCG(9, 9))
				reqs := make([]map[string]*tensor.Tensor, len(sizes))
				for i, n := range sizes {
					x := make([]float32, n*2048)
					for j := range x {
						x[j] = float32(rng.NormFloat64())
					}
					reqs[i] = map[string]*tensor.Tensor{"x": tensor.From([]int{n, 2048}, x)}
					total += n
				}
				b, err := New(m, Config{MaxBatchSize: total, Dynamic: true, MaxQueueDelay: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				got, errs := submit(b, context.Background(), reqs, nil)
				for i := range reqs {
					if errs[i] != nil {
						t.Fatal(errs[i])
					}
					want, _ := m.Run(context.Background(), reqs[i], nil)
					sameOutputs(t, fmt.Sprintf("request %d (%d rows)", i, sizes[i]), got[i], want)
				}
				if st := b.Stats(); st.Executions != 1 || st.Batches[0].Size != total {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

// TestIdleRequestRunsInline: with no queue delay, a request finding an
// idle instance and nothing waiting runs at once as a batch of one (in
// its caller's goroutine), counted like any batch; its caller leaving
// cancels that execution, and the batcher goes on serving.
func TestIdleRequestRunsInline(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 8, Dynamic: true, Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	in := mixedInputs(rng, 2)
	got, err := b.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Run(context.Background(), in, nil)
	sameOutputs(t, "inline request", got, want)
	if st := b.Stats(); st.Executions != 1 || st.Requests != 1 || len(st.Batches) != 1 || st.Batches[0].Size != 2 || st.Waiting != 0 {
		t.Fatalf("stats %+v", st)
	}

	started, resume := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	b.beforeRun = func(context.Context) { close(started); <-resume }
	b.afterRun = func(err error) { finished <- err }
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { _, err := b.Run(ctx, mixedInputs(rng, 1), nil); gone <- err }()
	<-started
	cancel()
	close(resume)
	if err := <-finished; !errors.Is(err, context.Canceled) {
		t.Errorf("the execution ran to %v, want its context cancelled", err)
	}
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v", err)
	}
	b.beforeRun, b.afterRun = nil, nil

	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 3)}
	outs, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d after", i), outs[i], want)
	}
	if st := b.Stats(); st.Cancelled != 1 || st.Requests != 3 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}
