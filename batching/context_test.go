package batching

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/tensor"
)

// endedSpans is a span processor that hands every ended span to the test.
type endedSpans chan sdktrace.ReadOnlySpan

func (endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c endedSpans) OnEnd(s sdktrace.ReadOnlySpan)                 { c <- s }
func (endedSpans) Shutdown(context.Context) error                  { return nil }
func (endedSpans) ForceFlush(context.Context) error                { return nil }

// tracer returns a tracer recording every span, and the spans as they end.
func tracer(t *testing.T) (trace.Tracer, endedSpans) {
	ended := make(endedSpans, 64)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("github.com/quantserve/quantserve/batching/test"), ended
}

// nextSpan returns the next ended span named name.
func nextSpan(t *testing.T, ended endedSpans, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	bound := time.After(30 * time.Second) // only bounds a failure
	for {
		select {
		case s := <-ended:
			if s.Name() == name {
				return s
			}
		case <-bound:
			t.Fatalf("no span %q ended", name)
		}
	}
}

type answer struct {
	outs map[string]*tensor.Tensor
	err  error
}

// runInOrder runs each request on its own goroutine, each queued before
// the next starts, and returns the channels of their answers.
func runInOrder(t *testing.T, b *Batcher, ctxs []context.Context, reqs []map[string]*tensor.Tensor) []chan answer {
	t.Helper()
	answers := make([]chan answer, len(reqs))
	for i := range reqs {
		answers[i] = make(chan answer, 1)
		go func() { o, err := b.Run(ctxs[i], reqs[i], nil); answers[i] <- answer{o, err} }()
		if i < len(reqs)-1 { // the last one completes the batch
			waitQueued(t, b, i+1)
		}
	}
	return answers
}

type requestKey struct{}

// TestBatchCarriesTheFirstRequestsTrace: a batch runs under a span that is
// a child of its first request's span and links to the others' spans;
// it takes neither that request's deadline nor its values.
func TestBatchCarriesTheFirstRequestsTrace(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 3, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan context.Context, 1)
	b.beforeRun = func(ctx context.Context) { seen <- ctx }
	tr, ended := tracer(t)
	rng := rand.New(rand.NewPCG(10, 10))
	reqs := make([]map[string]*tensor.Tensor, 3)
	ctxs := make([]context.Context, 3)
	spans := make([]trace.Span, 3)
	for i := range reqs {
		reqs[i] = mixedInputs(rng, 1)
		ctxs[i], spans[i] = tr.Start(context.Background(), fmt.Sprintf("request %d", i))
	}
	ctx0, cancel := context.WithTimeout(ctxs[0], time.Hour)
	defer cancel()
	ctxs[0] = context.WithValue(ctx0, requestKey{}, "request 0")

	answers := runInOrder(t, b, ctxs, reqs)
	for i := range reqs {
		a := <-answers[i]
		if a.err != nil {
			t.Fatal(a.err)
		}
		want, _ := m.Run(context.Background(), reqs[i], nil)
		sameOutputs(t, fmt.Sprintf("request %d", i), a.outs, want)
		spans[i].End()
	}
	if st := b.Stats(); st.Executions != 1 || st.Batches[0].Size != 3 {
		t.Fatalf("stats %+v: want one batch of the three", st)
	}

	ctx := <-seen
	first := spans[0].SpanContext()
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID() != first.TraceID() || sc.SpanID() == first.SpanID() {
		t.Errorf("the batch runs in span %v of trace %v, want a new span in the first request's trace %v", sc.SpanID(), sc.TraceID(), first.TraceID())
	}
	if d, ok := ctx.Deadline(); ok {
		t.Errorf("the batch has the deadline %v of a request", d)
	}
	if v := ctx.Value(requestKey{}); v != nil {
		t.Errorf("the batch's context holds a request's value %v", v)
	}

	s := nextSpan(t, ended, "batching.execute")
	if s.SpanContext().SpanID() != sc.SpanID() {
		t.Errorf("span %v ended, want the batch's %v", s.SpanContext().SpanID(), sc.SpanID())
	}
	if s.Parent().SpanID() != first.SpanID() {
		t.Errorf("the batch span's parent is %v, want the first request's span %v", s.Parent().SpanID(), first.SpanID())
	}
	if len(s.Links()) != 2 {
		t.Fatalf("the batch span has %d links, want 2", len(s.Links()))
	}
	for i, l := range s.Links() {
		if want := spans[i+1].SpanContext(); !l.SpanContext.Equal(want) {
			t.Errorf("link %d: %v, want request %d's span %v", i, l.SpanContext.SpanID(), i+1, want.SpanID())
		}
	}
	attrs := map[attribute.Key]int64{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value.AsInt64()
	}
	if attrs["batching.requests"] != 3 || attrs["batching.rows"] != 3 {
		t.Errorf("attributes %v", s.Attributes())
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("status %+v of a batch that succeeded", s.Status())
	}
}

// TestBatchContextEndsWithItsLastRequest: a batch's context stays live
// while any of its requests waits (the first one, whose trace it carries,
// included) and is cancelled when the last one leaves; the span records
// why the execution ended.
func TestBatchContextEndsWithItsLastRequest(t *testing.T) {
	m := loadModel(t, mixedGraph(), dispatch.Available()[0])
	b, err := New(m, Config{MaxBatchSize: 3, Dynamic: true, MaxQueueDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	running, resume := make(chan context.Context, 1), make(chan struct{})
	finished := make(chan error, 1)
	b.beforeRun = func(ctx context.Context) { running <- ctx; <-resume }
	b.afterRun = func(err error) { finished <- err }
	tr, ended := tracer(t)
	rng := rand.New(rand.NewPCG(11, 11))

	// Phase 1: two of three leave, the first among them; the third gets
	// its answer from the same execution.
	reqs := []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 1), mixedInputs(rng, 1)}
	ctxs := make([]context.Context, 3)
	cancels := make([]context.CancelFunc, 3)
	for i := range ctxs {
		ctx, span := tr.Start(context.Background(), fmt.Sprintf("request %d", i))
		defer span.End()
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	answers := runInOrder(t, b, ctxs, reqs)
	bctx := <-running
	for _, i := range []int{0, 1} {
		cancels[i]()
		if a := <-answers[i]; !errors.Is(a.err, context.Canceled) {
			t.Fatalf("cancelled request %d: %v", i, a.err)
		}
		if err := bctx.Err(); err != nil {
			t.Fatalf("request %d left, one still waits: the batch's context ended (%v)", i, err)
		}
	}
	resume <- struct{}{}
	if err := <-finished; err != nil {
		t.Fatalf("the batch ran to %v", err)
	}
	a := <-answers[2]
	if a.err != nil {
		t.Fatal(a.err)
	}
	want, _ := m.Run(context.Background(), reqs[2], nil)
	sameOutputs(t, "request 2", a.outs, want)
	if s := nextSpan(t, ended, "batching.execute"); s.Status().Code != codes.Unset {
		t.Errorf("status %+v of a batch that succeeded", s.Status())
	}

	// Phase 2: both requests of a batch (of one row and two) leave, one
	// after the other.
	reqs = []map[string]*tensor.Tensor{mixedInputs(rng, 1), mixedInputs(rng, 2)}
	ctxs, cancels = ctxs[:2], cancels[:2]
	for i := range ctxs {
		ctx, span := tr.Start(context.Background(), fmt.Sprintf("request %d", i))
		defer span.End()
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	answers = runInOrder(t, b, ctxs, reqs)
	bctx = <-running
	cancels[0]()
	if a := <-answers[0]; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("cancelled request 0: %v", a.err)
	}
	if err := bctx.Err(); err != nil {
		t.Fatalf("one request left, one still waits: the batch's context ended (%v)", err)
	}
	cancels[1]()
	if a := <-answers[1]; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("cancelled request 1: %v", a.err)
	}
	// The last request leaves (batch.leave) before its Run returns.
	if err := bctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("every request left: the batch's context is %v, want cancelled", err)
	}
	close(resume)
	if err := <-finished; !errors.Is(err, context.Canceled) {
		t.Errorf("the batch ran to %v, want its context cancelled", err)
	}
	if s := nextSpan(t, ended, "batching.execute"); s.Status().Code != codes.Error {
		t.Errorf("status %+v of a cancelled batch, want an error", s.Status())
	}
	if st := b.Stats(); st.Executions != 1 || st.Cancelled != 4 || st.Requests != 3 {
		t.Errorf("stats %+v", st)
	}
}
