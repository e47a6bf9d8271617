package batching

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// ErrQueueFull refuses a request when MaxQueueSize requests already wait:
// the client should retry shortly (HTTP 503 with Retry-After).
var ErrQueueFull = errors.New("batching: queue full")

// Config is a model's batching configuration, with the meaning of
// Triton's model configuration fields of the same names.
type Config struct {
	// MaxBatchSize is max_batch_size: 0 means the model has no batch
	// dimension and never batches; otherwise dimension 0 of every input
	// and output is the batch, and a batch holds at most this many rows.
	MaxBatchSize int
	// Dynamic is true when dynamic_batching is given: the server stacks
	// concurrent requests (with MaxBatchSize > 0).
	Dynamic bool
	// MaxQueueDelay is dynamic_batching.max_queue_delay_microseconds: how
	// long the oldest request may wait for more rows before a batch that
	// is neither full nor of a preferred size is sent. 0 sends at once
	// whatever has gathered.
	MaxQueueDelay time.Duration
	// PreferredBatchSizes is dynamic_batching.preferred_batch_size: batch
	// sizes sent as soon as they can be formed.
	PreferredBatchSizes []int
	// MaxQueueSize is dynamic_batching.default_queue_policy's
	// max_queue_size (Triton), given directly here: requests waiting
	// beyond it are refused with ErrQueueFull. 0 means no bound other
	// than the server's --max-inflight.
	MaxQueueSize int
	// Instances is how many batches of the model may execute at once (as
	// Triton's instance_group count): every free instance takes the next
	// batch. 0 means up to GOMAXPROCS, but a batch that is neither full
	// nor of a preferred size then starts only when no other execution
	// runs: the operators split an execution over the engine's cores, so
	// partial batches running side by side would only share the cores and
	// split the waiting requests into smaller batches, each streaming
	// every weight; full batches still run side by side on free instances.
	Instances int
}

// Enabled reports whether the configuration batches requests.
func (c Config) Enabled() bool { return c.MaxBatchSize > 0 && c.Dynamic }

// Check checks the configuration's own values.
func (c Config) Check() error {
	if c.MaxBatchSize < 0 {
		return fmt.Errorf("max_batch_size %d must not be negative", c.MaxBatchSize)
	}
	if c.MaxQueueDelay < 0 {
		return fmt.Errorf("max_queue_delay_microseconds must not be negative")
	}
	if c.MaxQueueSize < 0 {
		return fmt.Errorf("max_queue_size %d must not be negative", c.MaxQueueSize)
	}
	if c.Instances < 0 {
		return fmt.Errorf("instances %d must not be negative", c.Instances)
	}
	for _, p := range c.PreferredBatchSizes {
		if p < 1 || p > c.MaxBatchSize {
			return fmt.Errorf("preferred_batch_size %d must be between 1 and max_batch_size (%d)", p, c.MaxBatchSize)
		}
	}
	if c.Dynamic && c.MaxBatchSize == 0 {
		return fmt.Errorf("dynamic_batching needs max_batch_size > 0")
	}
	return nil
}

// Batcher runs a model's requests, stacking concurrent ones. It is safe
// for concurrent use.
type Batcher struct {
	m         *model.Model
	cfg       Config
	preferred []int    // descending
	outputs   []string // every output of the model, in order
	slots     chan struct{}
	wake      chan struct{}
	// gated: Instances was not given, and a partial batch waits while
	// another executes (see Config.Instances).
	gated bool

	mu        sync.Mutex
	queue     []*request
	running   bool // a scheduler goroutine exists
	executing int  // batches executing now
	disabled  error
	st        counters

	// Tests hold an execution between its batch's forming and the model
	// run, see the context it runs under, see how the run ended, and see
	// the scheduler wait for a running execution.
	beforeRun func(ctx context.Context)
	afterRun  func(error)
	// parked sees the requests waiting when the scheduler waits for a
	// running execution's end (b.mu held).
	parked func(waiting int)
}

// New returns a batcher for m with cfg, which must be Enabled.
func New(m *model.Model, cfg Config) (*Batcher, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, fmt.Errorf("batching: the configuration does not batch (max_batch_size %d, dynamic_batching %v)", cfg.MaxBatchSize, cfg.Dynamic)
	}
	gated := cfg.Instances == 0
	if gated {
		cfg.Instances = runtime.GOMAXPROCS(0)
	}
	b := &Batcher{m: m, cfg: cfg, slots: make(chan struct{}, cfg.Instances), wake: make(chan struct{}, 1), gated: gated}
	b.preferred = slices.Clone(cfg.PreferredBatchSizes)
	slices.Sort(b.preferred)
	slices.Reverse(b.preferred)
	for _, sp := range m.Outputs {
		b.outputs = append(b.outputs, sp.Name)
	}
	b.st.sizes = map[int]*BatchStat{}
	return b, nil
}

// Config returns the batcher's configuration.
func (b *Batcher) Config() Config { return b.cfg }

// request is one caller's inputs waiting for, or in, a batch.
type request struct {
	ctx     context.Context
	inputs  []*tensor.Tensor // in the model's input order
	rows    int
	outputs []string // nil: all
	enq     time.Time
	done    chan result // buffered: a batch never blocks on a caller gone
	batch   *batch      // set (under Batcher.mu) when taken into a batch
}

type result struct {
	outs  map[string]*tensor.Tensor
	err   error
	alone bool // the batch failed: run the request alone
}

// batch is requests executing together.
type batch struct {
	reqs   []*request
	rows   int
	mu     sync.Mutex
	live   int // requests still waiting for the answer
	cancel context.CancelFunc
}

// leave records that a request stopped waiting; the last one out cancels
// the execution.
func (bt *batch) leave() {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.live--; bt.live == 0 && bt.cancel != nil {
		bt.cancel()
	}
}

// Run runs the model on inputs for the named outputs (nil: all), as
// model.Model.Run does, stacked with concurrent requests where they stack.
// ctx bounds the request's wait and its share of the execution.
func (b *Batcher) Run(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	r, ok := b.stackable(inputs, outputs)
	if !ok {
		return b.alone(ctx, inputs, outputs, leadingDim(inputs))
	}
	r.ctx = ctx
	r.done = make(chan result, 1)
	b.mu.Lock()
	if b.disabled != nil {
		b.mu.Unlock()
		return b.alone(ctx, inputs, outputs, r.rows)
	}
	if n := len(b.queue); b.cfg.MaxQueueSize > 0 && n >= b.cfg.MaxQueueSize {
		b.st.rejected++
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %d requests are waiting for model execution (max_queue_size); retry shortly", ErrQueueFull, n)
	}
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	r.enq = time.Now()
	if b.cfg.MaxQueueDelay == 0 && !b.running && len(b.queue) == 0 && !b.waits(r.rows) {
		select {
		case b.slots <- struct{}{}:
			// An instance is idle and nothing waits: the scheduler would
			// send this request alone at once, so its caller runs it,
			// without two goroutine hand-offs.
			bt := &batch{reqs: []*request{r}, rows: r.rows, live: 1}
			r.batch = bt
			b.executing++
			b.mu.Unlock()
			return b.runInline(ctx, bt, inputs, outputs)
		default:
		}
	}
	b.queue = append(b.queue, r)
	if !b.running {
		b.running = true
		go b.schedule()
	} else {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()

	select {
	case res := <-r.done:
		if res.alone {
			return b.alone(ctx, inputs, outputs, r.rows)
		}
		return res.outs, res.err
	case <-ctx.Done():
		b.mu.Lock()
		b.st.cancelled++
		if r.batch == nil {
			if i := slices.Index(b.queue, r); i >= 0 {
				b.queue = slices.Delete(b.queue, i, i+1)
			}
			b.mu.Unlock()
		} else {
			b.mu.Unlock()
			r.batch.leave()
		}
		return nil, ctx.Err()
	}
}

// runInline executes bt, the batch of one request its caller formed, in
// the caller's goroutine, holding an instance slot, under the caller's
// context: its leaving cancels the execution, as the last request leaving
// a batch does.
func (b *Batcher) runInline(ctx context.Context, bt *batch, inputs map[string]*tensor.Tensor, outputs []string) (map[string]*tensor.Tensor, error) {
	r := bt.reqs[0]
	b.execute(ctx, bt)
	<-b.slots
	res := <-r.done
	if err := ctx.Err(); err != nil {
		b.mu.Lock()
		b.st.cancelled++
		b.mu.Unlock()
		return nil, err
	}
	if res.alone {
		return b.alone(ctx, inputs, outputs, r.rows)
	}
	return res.outs, res.err
}

// leadingDim returns the first dimension of some input (1 for scalars):
// the rows of a request that runs alone, for the statistics.
func leadingDim(inputs map[string]*tensor.Tensor) int {
	for _, t := range inputs {
		if t != nil && t.Rank() > 0 {
			return t.Shape[0]
		}
	}
	return 1
}

// alone runs one request by itself on the caller's goroutine.
func (b *Batcher) alone(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string, rows int) (map[string]*tensor.Tensor, error) {
	start := time.Now()
	outs, err := b.m.Run(ctx, inputs, outputs)
	d := time.Since(start)
	b.mu.Lock()
	b.st.alone++
	b.st.requests++
	if err == nil {
		b.st.inferences += int64(rows)
		b.st.execute(rows, d)
	}
	b.mu.Unlock()
	return outs, err
}

// stackable returns the request as the batcher queues it, or false when it
// must run alone: it does not name exactly the model's inputs with their
// datatypes and acceptable shapes of one common first dimension between 1
// and MaxBatchSize, or it asks for an output the model lacks.
func (b *Batcher) stackable(inputs map[string]*tensor.Tensor, outputs []string) (*request, bool) {
	specs := b.m.Inputs
	if len(inputs) != len(specs) || len(specs) == 0 {
		return nil, false
	}
	r := &request{inputs: make([]*tensor.Tensor, len(specs)), rows: -1}
	for i, sp := range specs {
		t, ok := inputs[sp.Name]
		if !ok || t == nil || t.DType != sp.DType || t.Rank() == 0 || sp.Accepts(t.Shape) != nil {
			return nil, false
		}
		if _, err := tensor.NumElements(t.Shape); err != nil {
			return nil, false
		}
		if r.rows < 0 {
			r.rows = t.Shape[0]
		} else if t.Shape[0] != r.rows {
			return nil, false
		}
		r.inputs[i] = t
	}
	if r.rows < 1 || r.rows > b.cfg.MaxBatchSize {
		return nil, false
	}
	for _, name := range outputs {
		if !slices.ContainsFunc(b.m.Outputs, func(s model.IOSpec) bool { return s.Name == name }) {
			return nil, false
		}
	}
	if outputs != nil {
		r.outputs = outputs
	}
	return r, true
}

// stacks reports whether r's inputs stack with head's: equal in every
// dimension after the first.
func stacks(head, r *request) bool {
	for i, t := range head.inputs {
		if !slices.Equal(t.Shape[1:], r.inputs[i].Shape[1:]) {
			return false
		}
	}
	return true
}

// schedule forms and starts batches while requests wait; it returns when
// the queue is empty.
func (b *Batcher) schedule() {
	var timer *time.Timer
	for {
		b.slots <- struct{}{} // an execution instance
		b.mu.Lock()
		var bt *batch
		for bt == nil {
			if len(b.queue) == 0 {
				b.running = false
				b.mu.Unlock()
				<-b.slots
				if timer != nil {
					timer.Stop()
				}
				return
			}
			var wait time.Duration
			if bt, wait = b.form(time.Now()); bt != nil {
				break
			}
			if wait <= 0 { // until a request comes or an execution ends
				if b.parked != nil {
					b.parked(len(b.queue))
				}
				b.mu.Unlock()
				<-b.wake
				b.mu.Lock()
				continue
			}
			b.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-b.wake:
			case <-timer.C:
			}
			timer.Stop()
			b.mu.Lock()
		}
		b.executing++
		b.mu.Unlock()
		go func() {
			defer func() { <-b.slots }()
			ctx, end := batchContext(bt)
			end(b.execute(ctx, bt))
		}()
	}
}

// waits reports whether a batch of rows rows that is not of a preferred
// size must wait for the executions running now to end (see
// Config.Instances). Called with b.mu held.
func (b *Batcher) waits(rows int) bool {
	return b.gated && b.executing > 0 && rows < b.cfg.MaxBatchSize
}

// form returns the batch to send now, taken out of the queue, or how long
// to wait for more requests (0: until a request comes or an execution
// ends). Called with b.mu held and a non-empty queue.
func (b *Batcher) form(now time.Time) (*batch, time.Duration) {
	head := b.queue[0]
	idx := []int{0}
	rows := head.rows
	full := rows == b.cfg.MaxBatchSize
	for i := 1; i < len(b.queue) && !full; i++ {
		r := b.queue[i]
		if !stacks(head, r) {
			continue
		}
		if rows+r.rows > b.cfg.MaxBatchSize {
			full = true // the next request in order does not fit
			break
		}
		idx = append(idx, i)
		rows += r.rows
		full = rows == b.cfg.MaxBatchSize
	}
	n := len(idx)
	if !full {
		waited := now.Sub(head.enq)
		partial := b.waits(rows)
		if partial || waited < b.cfg.MaxQueueDelay {
			// A preferred size can go now: the largest one reached.
			n = 0
			for _, p := range b.preferred {
				sum := 0
				for j, i := range idx {
					if sum += b.queue[i].rows; sum == p {
						n = j + 1
						break
					}
				}
				if n > 0 {
					break
				}
			}
			if n == 0 && partial {
				return nil, 0
			}
			if n == 0 {
				return nil, b.cfg.MaxQueueDelay - waited
			}
		}
	}
	bt := &batch{reqs: make([]*request, 0, n)}
	for _, i := range idx[:n] {
		r := b.queue[i]
		r.batch = bt
		bt.reqs = append(bt.reqs, r)
		bt.rows += r.rows
	}
	// Remove the taken requests, keeping the others in order.
	taken := idx[:n]
	kept := b.queue[:0]
	for i, r := range b.queue {
		if len(taken) > 0 && taken[0] == i {
			taken = taken[1:]
			continue
		}
		kept = append(kept, r)
	}
	clear(b.queue[len(kept):])
	b.queue = kept
	bt.live = len(bt.reqs)
	return bt, 0
}

// tracerName names the spans the batcher starts.
const tracerName = "github.com/quantserve/quantserve/batching"

// batchContext returns the context a scheduled batch runs under, and the
// function that ends its span with the execution's error.
//
// The context carries the trace of the batch's first request (the first
// in queue order whose context has a valid span context): a span
// "batching.execute", started with the tracer provider of that request's
// span, is its child and links to the spans of the other requests, so
// every request's trace leads to the execution it shared. The context
// takes nothing else from the requests but the memory budget of the
// first (model.WithBudget): no deadline and no cancellation (one request's
// end must not stop the others' batch: execute cancels it when every
// request has left, see batch.leave) and no other values. A batch whose
// values pass that budget fails, and its requests run alone, each under
// its own.
func batchContext(bt *batch) (context.Context, func(error)) {
	ctx, end := batchSpan(bt)
	if b := model.BudgetOf(bt.reqs[0].ctx); b != nil {
		ctx = model.WithBudget(ctx, b)
	}
	return ctx, end
}

// batchSpan returns the context carrying a batch's trace, and the
// function that ends its span.
func batchSpan(bt *batch) (context.Context, func(error)) {
	var parent trace.Span
	var links []trace.Link
	for _, r := range bt.reqs {
		span := trace.SpanFromContext(r.ctx)
		sc := span.SpanContext()
		switch {
		case !sc.IsValid():
		case parent == nil:
			parent = span
		default:
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	if parent == nil {
		return context.Background(), func(error) {}
	}
	ctx := trace.ContextWithSpan(context.Background(), parent)
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "batching.execute",
		trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("batching.requests", len(bt.reqs)), attribute.Int("batching.rows", bt.rows)))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// execute runs a batch and answers its requests, under parent (the
// requests leaving cancel it too). It returns the execution's error: nil
// when every request got its rows, else the reason each runs alone.
func (b *Batcher) execute(parent context.Context, bt *batch) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	bt.mu.Lock()
	bt.cancel = cancel
	if bt.live == 0 { // every request left while the batch formed
		cancel()
	}
	bt.mu.Unlock()

	if b.beforeRun != nil {
		b.beforeRun(ctx)
	}
	start := time.Now()
	names := outputUnion(bt.reqs)
	var outs map[string]*tensor.Tensor
	err := ctx.Err()
	if err == nil {
		var stacked map[string]*tensor.Tensor
		if stacked, err = b.stack(bt); err == nil {
			outs, err = b.runProtected(ctx, stacked, names)
		}
	}
	if b.afterRun != nil {
		b.afterRun(err)
	}
	if err == nil {
		err = checkRows(outs, bt.rows)
	}
	d := time.Since(start)

	b.mu.Lock()
	b.executing--
	for _, r := range bt.reqs {
		b.st.queue.add(start.Sub(r.enq))
	}
	if err == nil {
		b.st.requests += int64(len(bt.reqs))
		b.st.inferences += int64(bt.rows)
		b.st.execute(bt.rows, d)
	} else if errors.Is(err, ErrNotBatchable) && b.disabled == nil {
		b.disabled = err
	}
	if err != nil && ctx.Err() == nil {
		b.st.retried += int64(len(bt.reqs))
	}
	b.mu.Unlock()
	if b.gated {
		select { // a partial batch may be waiting for this execution's end
		case b.wake <- struct{}{}:
		default:
		}
	}

	off := 0
	for _, r := range bt.reqs {
		switch {
		case err != nil:
			r.done <- result{alone: true} // a request gone reads nothing: the channel is buffered
		default:
			want := r.outputs
			if want == nil {
				want = b.outputs
			}
			res := make(map[string]*tensor.Tensor, len(want))
			for _, name := range want {
				res[name] = outs[name].SliceRows(off, r.rows)
			}
			r.done <- result{outs: res}
		}
		off += r.rows
	}
	return err
}

// runProtected runs the model, turning a panic into an error: the batch's
// requests then run alone, where the panic (if it is theirs) reaches the
// server's own recovery with its request.
func (b *Batcher) runProtected(ctx context.Context, in map[string]*tensor.Tensor, names []string) (outs map[string]*tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("batching: panic in a batched execution: %v", p)
		}
	}()
	return b.m.Run(ctx, in, names)
}

// outputUnion returns the outputs a batch computes: nil (all of them) when
// a request wants all.
func outputUnion(reqs []*request) []string {
	var names []string
	for _, r := range reqs {
		if r.outputs == nil {
			names = nil
			break
		}
		for _, n := range r.outputs {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// stack concatenates the batch's inputs along dimension 0.
func (b *Batcher) stack(bt *batch) (map[string]*tensor.Tensor, error) {
	in := make(map[string]*tensor.Tensor, len(b.m.Inputs))
	for i, sp := range b.m.Inputs {
		head := bt.reqs[0].inputs[i]
		if len(bt.reqs) == 1 {
			in[sp.Name] = head
			continue
		}
		shape := slices.Clone(head.Shape)
		shape[0] = bt.rows
		t, err := tensor.New(head.DType, shape)
		if err != nil {
			return nil, err
		}
		dst := reflect.ValueOf(t.Data)
		off := 0
		for _, r := range bt.reqs {
			src := r.inputs[i]
			n := src.Len()
			tensor.CopyData(dst.Slice(off, off+n).Interface(), src.Data)
			off += n
		}
		in[sp.Name] = t
	}
	return in, nil
}

// checkRows checks that every output has the batch's rows first.
func checkRows(outs map[string]*tensor.Tensor, rows int) error {
	for name, t := range outs {
		if t == nil || t.Rank() == 0 || t.Shape[0] != rows {
			shape := "none"
			if t != nil {
				shape = tensor.ShapeString(t.Shape)
			}
			return fmt.Errorf("%w: output %q of a batch of %d rows has shape %s", ErrNotBatchable, name, rows, shape)
		}
	}
	return nil
}

// Disabled returns why the batcher stopped batching (the model broke the
// contract of max_batch_size at run time), or nil.
func (b *Batcher) Disabled() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.disabled
}
