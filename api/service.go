package api

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// The steps an inference takes whichever front end (HTTP or gRPC)
// received it, so both share one set of limits, one execution path and
// one error mapping: admit (a work slot and the request deadline), the
// inputs and requested outputs checked, execute (the model run), each
// step a span of the request's trace.

// inferCodec is a front end's part of an inference: decoding the request
// it received, holding the decoded tensors against the memory budget, and
// encoding the answer it will send.
type inferCodec interface {
	// decode decodes the request; inferCore calls it once the model
	// version is found.
	decode() (*oip.InferRequest, error)
	// hold counts the decoded tensors against the request's share of
	// the memory budget.
	hold(decoded []*tensor.Tensor) error
	// encode encodes the answer to req for the front end to send once
	// inferCore returns; its time is the statistics' output time.
	encode(req *oip.InferRequest, resp *oip.InferResponse) error
	// account is the request's share of the memory budget, which the
	// model's run and the answer are charged to as well.
	account() *account
}

// inferCore is the one inference path of both front ends, for a request
// whose input was in at received and which holds a work slot (ctx carries
// its deadline): it finds the model version and holds it until it returns,
// decodes and checks the request (codec.decode, checkRequest), runs the
// model (execute), builds the answer and has codec encode it, and records
// the inference in the version's statistics and in telemetry, each step in
// a span of the request's trace. A failure at any step counts as a failed
// inference of the version found.
func (s *server) inferCore(ctx context.Context, name, version string, received time.Time, codec inferCodec) (err error) {
	e, v, release, err := s.repo.Get(name, version)
	if err != nil {
		return err
	}
	defer release()
	number := strconv.FormatInt(v.Number, 10)
	noteInference(ctx, e.Name, number)
	defer func() { s.tel.Inference(ctx, e.Name, number, err == nil) }()
	var timing repository.Timing
	start := time.Now()
	timing.Queue = start.Sub(received)
	defer func() { recordStats(v, received, &timing, err) }()

	_, span := s.step(ctx, "decode")
	req, err := codec.decode()
	var inputs map[string]*tensor.Tensor
	var names []string
	if err == nil {
		inputs, names, timing.Batch, err = checkRequest(e, v, req, codec.hold)
	}
	endStep(span, err)
	if err != nil {
		return err
	}
	inferStart := time.Now()
	timing.Input = inferStart.Sub(start)
	acct := codec.account()
	names, outs, err := s.execute(model.WithBudget(ctx, acct), v, inputs, names)
	if err != nil {
		return err
	}
	// The outputs are held until the answer is written.
	if n := model.FreshBytes(outs, inputs); n > 0 {
		if err := acct.grow(n); err != nil {
			return fmt.Errorf("holding the outputs (%s): %w", ops.FormatBytes(n), err)
		}
	}
	outputStart := time.Now()
	timing.Infer = outputStart.Sub(inferStart)
	_, span = s.step(ctx, "encode")
	defer span.End()
	resp := &oip.InferResponse{ModelName: e.Name, ModelVersion: number, ID: req.ID, Outputs: make([]oip.OutputTensor, 0, len(names))}
	for _, name := range names {
		resp.Outputs = append(resp.Outputs, oip.OutputTensor{Name: name, Tensor: outs[name]})
	}
	if err := codec.encode(req, resp); err != nil {
		return err
	}
	timing.Output = time.Since(outputStart)
	return nil
}

// admit takes a work slot for a request whose input is in, or refuses it
// at once (CodeUnavailable: no queue), and returns the context its work
// runs in, bounded by --request-timeout (a deadlineCtx: no timer unless
// something waits on it; the caller cancels it when done), with the
// function that gives the slot back (safe to call more than once). The
// wait is the request's "queue" span.
func (s *server) admit(ctx context.Context) (*deadlineCtx, func(), error) {
	_, span := s.step(ctx, "queue")
	defer span.End()
	select {
	case s.inflight <- struct{}{}:
	default:
		s.tel.Rejected(ctx, "inflight")
		err := &Error{Code: CodeUnavailable, RetryAfter: 1, Msg: fmt.Sprintf("the server is busy: %d requests are in flight (--max-inflight); retry shortly", cap(s.inflight))}
		span.SetStatus(codes.Error, err.Msg)
		return nil, nil, err
	}
	s.tel.InFlight(1)
	held := true
	release := func() {
		if held {
			held = false
			<-s.inflight
			s.tel.InFlight(-1)
		}
	}
	return withDeadline(ctx, time.Now().Add(s.timeout)), release, nil
}

// extensions lists the protocol extensions GET /v2 and gRPC's
// ServerMetadata report.
func (s *server) extensions() []string {
	return append(slices.Clone(extensions), autodiffExtensions()...)
}

// checkBatch checks the inputs' batch against the model's config
// (max_batch_size) and returns the batch size the statistics count.
func checkBatch(e *repository.Entry, v *repository.Version, inputs map[string]*tensor.Tensor, decoded []*tensor.Tensor) (int64, error) {
	shapes := make([][]int, 0, len(decoded))
	for _, t := range decoded {
		shapes = append(shapes, t.Shape)
	}
	if err := e.Config.CheckBatch(shapes); err != nil {
		return 0, err
	}
	return batchSize(v.Model, inputs), nil
}

// recordStats adds an inference to its version's statistics (Triton's
// statistics extension): a failure with its time since its input was in,
// or a success with the times of its steps.
func recordStats(v *repository.Version, received time.Time, timing *repository.Timing, err error) {
	now := time.Now()
	if err != nil {
		v.Stats.Failure(now, now.Sub(received))
	} else {
		v.Stats.Success(now, now.Sub(received), *timing)
	}
}

// checkRequest is the part of the decode step both front ends share: it
// indexes a decoded request's inputs, holds their bytes against the
// server's budget (hold), checks the batch against the model's config and
// reads the requested outputs' names.
func checkRequest(e *repository.Entry, v *repository.Version, req *oip.InferRequest, hold func([]*tensor.Tensor) error) (map[string]*tensor.Tensor, []string, int64, error) {
	inputs, decoded, err := inputMap(req.Inputs)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := hold(decoded); err != nil {
		return nil, nil, 0, err
	}
	batch, err := checkBatch(e, v, inputs, decoded)
	if err != nil {
		return nil, nil, 0, err
	}
	names, err := requestedNames(req.Outputs)
	if err != nil {
		return nil, nil, 0, err
	}
	return inputs, names, batch, nil
}

// inputMap indexes a request's inputs by name, refusing duplicates.
func inputMap(ins []oip.InputTensor) (map[string]*tensor.Tensor, []*tensor.Tensor, error) {
	inputs := make(map[string]*tensor.Tensor, len(ins))
	list := make([]*tensor.Tensor, 0, len(ins))
	for _, in := range ins {
		if _, dup := inputs[in.Name]; dup {
			return nil, nil, errorf(CodeInvalid, fmt.Sprintf("input %q appears more than once", in.Name))
		}
		inputs[in.Name] = in.Tensor
		list = append(list, in.Tensor)
	}
	return inputs, list, nil
}

// requestedNames returns the names of the requested outputs, nil for all,
// refusing duplicates.
func requestedNames(outs []oip.RequestedOutput) ([]string, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(outs))
	seen := map[string]bool{}
	for _, o := range outs {
		if seen[o.Name] {
			return nil, errorf(CodeInvalid, fmt.Sprintf("output %q is requested more than once", o.Name))
		}
		seen[o.Name] = true
		names = append(names, o.Name)
	}
	return names, nil
}

// execute runs model version v on inputs for the named outputs (nil: all,
// in the model's order), in the request's "execute" span, and returns the
// outputs with their names in answer order.
func (s *server) execute(ctx context.Context, v *repository.Version, inputs map[string]*tensor.Tensor, names []string) ([]string, map[string]*tensor.Tensor, error) {
	ctx, span := s.step(ctx, "execute")
	defer span.End()
	outs, err := v.Run(ctx, inputs, names)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, nil, err
	}
	if names == nil {
		for _, spec := range v.Model.Outputs {
			names = append(names, spec.Name)
		}
	}
	return names, outs, nil
}

// step starts a child span of the request for one step (decode, encode).
func (s *server) step(ctx context.Context, name string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		// Nobody will see it (no exporter, or the trace is not
		// sampled): the request's own span names the trace in its log.
		return ctx, noSpan
	}
	return s.tracer.Start(ctx, name)
}

// noSpan is the span of a step nobody records.
var noSpan = trace.SpanFromContext(context.Background())

// endStep ends a step's span, marking it failed when err is not nil.
func endStep(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
