package batching

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// twoProcs runs the test with at least two Ps, so that the default
// instances (GOMAXPROCS) are more than one.
func twoProcs(t *testing.T) {
	if n := runtime.GOMAXPROCS(0); n < 2 {
		runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(n) })
	}
}

// heldRuns makes b's executions wait before the model runs until resume
// is closed, and reports each start on the returned channel.
func heldRuns(b *Batcher) (started chan struct{}, resume chan struct{}) {
	started, resume = make(chan struct{}, 64), make(chan struct{})
	b.beforeRun = func(context.Context) { started <- struct{}{}; <-resume }
	return started, resume
}

// parkedWith makes b report on the returned channel the requests waiting
// each time its scheduler waits for a running execution's end.
func parkedWith(b *Batcher) chan int {
	c := make(chan int, 1024)
	b.parked = func(n int) {
		select {
		case c <- n:
		default:
		}
	}
	return c
}

// waitParked waits until the scheduler waits for a running execution with
// n requests in the queue: it formed no batch of them.
func waitParked(t *testing.T, parked chan int, n int) {
	t.Helper()
	limit := time.After(30 * time.Second) // only bounds a failure
	for {
		select {
		case got := <-parked:
			if got == n {
				return
			}
		case <-limit:
			t.Fatalf("the scheduler never waited with %d requests queued", n)
		}
	}
}

type gateAnswer struct {
	outs map[string]*tensor.Tensor
	err  error
}

func runAsync(b *Batcher, in map[string]*tensor.Tensor) chan gateAnswer {
	c := make(chan gateAnswer, 1)
	go func() { o, err := b.Run(context.Background(), in, nil); c <- gateAnswer{o, err} }()
	return c
}

// runBeside holds b's executions, sends a request of first rows and
// waits for its execution to start, then one of second rows, and waits
// for a second execution to start beside the first (the test fails by
// its deadline otherwise); it then lets both end and fails unless both
// are answered without error.
func runBeside(t *testing.T, b *Batcher, rng *rand.Rand, first, second int) {
	t.Helper()
	started, resume := heldRuns(b)
	answers := []chan gateAnswer{runAsync(b, mixedInputs(rng, first))}
	<-started
	answers = append(answers, runAsync(b, mixedInputs(rng, second)))
	<-started
	close(resume)
	for _, a := range answers {
		if got := <-a; got.err != nil {
			t.Fatal(got.err)
		}
	}
}

// wantAlone waits for each request's answer and fails unless it is what
// m gives the request run alone.
func wantAlone(t *testing.T, m *model.Model, reqs []map[string]*tensor.Tensor, answers []chan gateAnswer) {
	t.Helper()
	for i, a := range answers {
		got := <-a
		if got.err != nil {
			t.Fatal(got.err)
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), got.outs, want)
	}
}

// TestPartialBatchWaitsForTheRunningOne: with the default instances, the
// requests arriving while a batch executes wait for its end, however
// long they have waited, and then go together as one batch, each with
// its own gateAnswer; the statistics count two executions.
func TestPartialBatchWaitsForTheRunningOne(t *testing.T) {
	twoProcs(t)
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 16, Dynamic: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Config().Instances < 2 {
		t.Fatalf("instances %d, want GOMAXPROCS", b.Config().Instances)
	}
	started, resume := heldRuns(b)
	parked := parkedWith(b)
	rng := rand.New(rand.NewPCG(11, 11))
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 2), mixedInputs(rng, 1), mixedInputs(rng, 3)}
	answers := []chan gateAnswer{runAsync(b, reqs[0])}
	<-started // the first request executes alone (no queue delay)
	for _, in := range reqs[1:] {
		answers = append(answers, runAsync(b, in))
	}
	waitParked(t, parked, 3) // no batch formed of the three
	if n := len(started); n != 0 {
		t.Fatalf("%d more executions started beside the running one", n)
	}
	close(resume)
	wantAlone(t, m, reqs, answers)
	st := b.Stats()
	if st.Executions != 2 || st.Requests != 4 || len(st.Batches) != 2 || st.Batches[0].Size != 1 || st.Batches[1].Size != 6 {
		t.Errorf("stats %+v: want a batch of 1, then one of 6", st)
	}
}

// TestFullBatchRunsBesideTheRunningOne: with the default instances, a
// full batch does not wait for the running execution: it takes a free
// instance at once.
func TestFullBatchRunsBesideTheRunningOne(t *testing.T) {
	twoProcs(t)
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 3, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started, resume := heldRuns(b)
	parked := parkedWith(b)
	rng := rand.New(rand.NewPCG(12, 12))
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 3), mixedInputs(rng, 1), mixedInputs(rng, 2)}
	answers := []chan gateAnswer{runAsync(b, reqs[0])}
	<-started // a full batch of one request of 3 rows
	answers = append(answers, runAsync(b, reqs[1]))
	waitParked(t, parked, 1) // one row of three: not a full batch
	answers = append(answers, runAsync(b, reqs[2]))
	<-started // 1 + 2 rows: full, beside the first
	close(resume)
	wantAlone(t, m, reqs, answers)
	if st := b.Stats(); st.Executions != 2 || len(st.Batches) != 1 || st.Batches[0].Size != 3 || st.Batches[0].Count != 2 {
		t.Errorf("stats %+v: want two batches of 3", st)
	}
}

// TestPreferredSizeRunsBesideTheRunningOne: a batch of a preferred size
// goes at once too, beside a running execution.
func TestPreferredSizeRunsBesideTheRunningOne(t *testing.T) {
	twoProcs(t)
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 16, Dynamic: true, PreferredBatchSizes: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	runBeside(t, b, rand.New(rand.NewPCG(13, 13)), 1, 2) // two rows: the preferred size
	if st := b.Stats(); st.Executions != 2 || st.Requests != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestExplicitInstancesRunPartialBatches: instances given in the
// configuration (instance_group) each take the next batch as soon as they
// are free, full or not, as Triton's do.
func TestExplicitInstancesRunPartialBatches(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 16, Dynamic: true, Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	runBeside(t, b, rand.New(rand.NewPCG(14, 14)), 1, 1) // one row on the second instance
	if st := b.Stats(); st.Executions != 2 || st.Batches[0].Size != 1 || st.Batches[0].Count != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestGatedLoadBitIdentical: many concurrent requests under the default
// instances, with the batches they form executing while others gather,
// each get what they get alone, and every one is answered.
func TestGatedLoadBitIdentical(t *testing.T) {
	twoProcs(t)
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 8, Dynamic: true, MaxQueueDelay: 100 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	b.beforeRun = func(context.Context) {
		n := running.Add(1)
		for {
			if old := most.Load(); n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
	}
	b.afterRun = func(error) { running.Add(-1) }
	rng := rand.New(rand.NewPCG(15, 15))
	reqs := make([]map[string]*tensor.Tensor, 96)
	for i := range reqs {
		reqs[i] = mixedInputs(rng, 1+i%3)
	}
	got, errs := submit(b, context.Background(), reqs, nil)
	for i := range reqs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), got[i], want)
	}
	st := b.Stats()
	if st.Requests != int64(len(reqs)) || st.Alone != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
	if n := int(most.Load()); n > b.Config().Instances {
		t.Errorf("%d executions at once, more than %d instances", n, b.Config().Instances)
	}
}
