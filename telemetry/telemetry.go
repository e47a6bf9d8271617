// Package telemetry sets up quantserve's OpenTelemetry meter provider and
// exports its metrics in Prometheus text format for GET /metrics: HTTP
// request counts and latencies by route, method and status, gRPC calls by
// method and code, inference counts and latencies by model and version,
// work requests in flight and being received, the bytes they hold,
// refusals, recovered panics, dynamic batching's counters (requests,
// executions by batch size, queue and compute time), the state of every
// model version (models.go), and the build (version, kernel table) as an
// info metric, beside the Go runtime's and the process's metrics, and
// target_info naming the service (Resource).
// It also sets up tracing (tracing.go): OTLP export of request spans when
// the standard OTEL_EXPORTER_OTLP_* variables ask for it, trace context
// read as OTEL_PROPAGATORS says.
package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Telemetry holds the instruments and the /metrics handler.
type Telemetry struct {
	// Handler serves the metrics in Prometheus text format.
	Handler http.Handler

	requests   metric.Int64Counter
	duration   metric.Float64Histogram
	grpcCalls  metric.Int64Counter
	grpcTime   metric.Float64Histogram
	modelTime  metric.Float64Histogram
	inferences metric.Int64Counter
	rejected   metric.Int64Counter
	panics     metric.Int64Counter

	meter        metric.Meter
	batchingOnce sync.Once
	modelsOnce   sync.Once
	layersOnce   sync.Once

	// Gauges every work request moves (several times each): plain atomics,
	// read at each scrape, instead of instrument calls on the hot path.
	inflight, receiving, memory atomic.Int64

	// The measurement options of the per-request instruments, built
	// once per label combination (the label sets are bounded) and read
	// without a lock.
	reqAttrs  attrCache[reqKey, reqAttrs]
	infAttrs  attrCache[infKey, []metric.AddOption]
	grpcAttrs attrCache[[2]string, reqAttrs]              // method, code
	latAttrs  attrCache[[2]string, []metric.RecordOption] // model, version
}

type reqKey struct {
	route, method string
	status        int
}

// reqAttrs are the options of a request's count and of its latency, as
// the slices the instruments' variadic calls take whole (passing them on
// allocates nothing).
type reqAttrs struct {
	count   []metric.AddOption
	latency []metric.RecordOption
}

type infKey struct {
	model, version string
	ok             bool
}

// maxCachedAttrs bounds each cache: label values a client chooses (a
// method name) cannot grow it without bound.
const maxCachedAttrs = 1024

// attrCache maps label values to what their measurements take. Every
// request reads it (an atomic load and a map lookup: no lock, nothing
// shared written); a new key copies the map under mu, which only the
// first requests of each label combination take.
type attrCache[K comparable, V any] struct {
	mu sync.Mutex // held by writers
	m  atomic.Pointer[map[K]V]
}

// get returns the value of k, made by mk the first time. mk takes the key
// (a function value that captures nothing allocates nothing).
func (c *attrCache[K, V]) get(k K, mk func(K) V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	return c.add(k, mk)
}

func (c *attrCache[K, V]) add(k K, mk func(K) V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	v := mk(k)
	if old != nil && len(*old) >= maxCachedAttrs {
		return v // built for this measurement only
	}
	m := make(map[K]V, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[k] = v
	c.m.Store(&m)
	return v
}

func lenOf[K comparable, V any](m *map[K]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// New returns telemetry on its own registry (so servers in one process,
// as in tests, do not share counters). version and kernels label the
// build info metric; target_info shows the process's Resource.
func New(version, kernels string) (*Telemetry, error) {
	res, err := Resource(context.Background(), version)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	// Go runtime (go_*) and process (process_*: CPU, resident memory,
	// open files) metrics.
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	meter := provider.Meter("quantserve")
	t := &Telemetry{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), meter: meter}
	if t.requests, err = meter.Int64Counter("quantserve.http.requests", metric.WithDescription("HTTP requests by route, method and status code")); err != nil {
		return nil, err
	}
	if t.duration, err = meter.Float64Histogram("quantserve.http.request.duration", metric.WithUnit("s"),
		metric.WithDescription("HTTP request latency by route and method"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if t.grpcCalls, err = meter.Int64Counter("quantserve.grpc.requests", metric.WithDescription("gRPC calls by method and status code")); err != nil {
		return nil, err
	}
	if t.grpcTime, err = meter.Float64Histogram("quantserve.grpc.request.duration", metric.WithUnit("s"),
		metric.WithDescription("gRPC call latency by method"), metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if t.modelTime, err = meter.Float64Histogram("quantserve.inference.duration", metric.WithUnit("s"),
		metric.WithDescription("Inference request latency (HTTP and gRPC, from the request's start to its answer) by model and version"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if t.inferences, err = meter.Int64Counter("quantserve.inferences", metric.WithDescription("Inference requests by model, version and outcome")); err != nil {
		return nil, err
	}
	for _, g := range []struct {
		name, desc string
		v          *atomic.Int64
	}{
		{"quantserve.inflight", "Work requests (infer, grad, train, tensor ops) in flight", &t.inflight},
		{"quantserve.receiving", "Work requests whose body is being received (they hold no work slot yet)", &t.receiving},
		{"quantserve.inflight.bytes", "Bytes of request bodies and decoded tensors held by requests in flight (bounded by --max-inflight-bytes)", &t.memory},
	} {
		v := g.v
		if _, err = meter.Int64ObservableUpDownCounter(g.name, metric.WithDescription(g.desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(v.Load())
				return nil
			})); err != nil {
			return nil, err
		}
	}
	if t.rejected, err = meter.Int64Counter("quantserve.rejected", metric.WithDescription("Work requests refused with 503 by reason: inflight (--max-inflight), memory (--max-inflight-bytes)")); err != nil {
		return nil, err
	}
	for _, reason := range []string{"inflight", "memory"} { // present at zero
		t.rejected.Add(context.Background(), 0, metric.WithAttributes(attribute.String("reason", reason)))
	}
	if t.panics, err = meter.Int64Counter("quantserve.panics", metric.WithDescription("Panics recovered while serving, by site (function and line)")); err != nil {
		return nil, err
	}
	info, err := meter.Int64ObservableGauge("quantserve.build.info", metric.WithDescription("Always 1; the labels name the version and the kernel table"))
	if err != nil {
		return nil, err
	}
	attrs := metric.WithAttributes(attribute.String("version", version), attribute.String("kernels", kernels))
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(info, 1, attrs)
		return nil
	}, info)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// latencyBuckets are the bounds (seconds) of every latency histogram.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Method returns the label of an HTTP method: itself for the methods of
// RFC 9110 and PATCH, "other" for any other token a client sends, so that
// made-up methods cannot grow the label set.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// The recording methods do nothing on a nil *Telemetry (metrics that
// failed to start).

// Request records one HTTP request: its route pattern (not the raw path,
// so model names do not explode the label set; "unmatched" for a request
// no route took), method (folded by Method), status and time.
func (t *Telemetry) Request(ctx context.Context, route, method string, status int, d time.Duration) {
	if t == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	a := t.reqAttrs.get(reqKey{route, Method(method), status}, httpAttrs)
	t.requests.Add(ctx, 1, a.count...)
	t.duration.Record(ctx, d.Seconds(), a.latency...)
}

func httpAttrs(k reqKey) reqAttrs {
	return reqAttrs{
		count:   []metric.AddOption{metric.WithAttributes(attribute.String("route", k.route), attribute.String("method", k.method), attribute.String("code", strconv.Itoa(k.status)))},
		latency: []metric.RecordOption{metric.WithAttributes(attribute.String("route", k.route), attribute.String("method", k.method))},
	}
}

// GRPCRequest records one gRPC call: its full method name (only the
// server's registered methods reach it), status code and time.
func (t *Telemetry) GRPCRequest(ctx context.Context, method, code string, d time.Duration) {
	if t == nil {
		return
	}
	a := t.grpcAttrs.get([2]string{method, code}, grpcAttrs)
	t.grpcCalls.Add(ctx, 1, a.count...)
	t.grpcTime.Record(ctx, d.Seconds(), a.latency...)
}

func grpcAttrs(k [2]string) reqAttrs {
	return reqAttrs{
		count:   []metric.AddOption{metric.WithAttributes(attribute.String("method", k[0]), attribute.String("code", k[1]))},
		latency: []metric.RecordOption{metric.WithAttributes(attribute.String("method", k[0]))},
	}
}

// InferenceLatency records the latency of one inference request on a
// model version (names the repository serves: a bounded set).
func (t *Telemetry) InferenceLatency(ctx context.Context, model, version string, d time.Duration) {
	if t == nil {
		return
	}
	t.modelTime.Record(ctx, d.Seconds(), t.latAttrs.get([2]string{model, version}, latencyAttrs)...)
}

func latencyAttrs(k [2]string) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributes(attribute.String("model", k[0]), attribute.String("version", k[1]))}
}

// Inference records one inference on a model version, ok or failed.
func (t *Telemetry) Inference(ctx context.Context, model, version string, ok bool) {
	if t == nil {
		return
	}
	t.inferences.Add(ctx, 1, t.inferenceAttrs(model, version, ok)...)
}

// inferenceAttrs returns the attributes of a version's inference counter.
func (t *Telemetry) inferenceAttrs(model, version string, ok bool) []metric.AddOption {
	return t.infAttrs.get(infKey{model, version, ok}, inferenceAttrs)
}

func inferenceAttrs(k infKey) []metric.AddOption {
	outcome := "ok"
	if !k.ok {
		outcome = "error"
	}
	return []metric.AddOption{metric.WithAttributes(attribute.String("model", k.model), attribute.String("version", k.version), attribute.String("outcome", outcome))}
}

// InFlight adds delta to the number of work requests in flight.
func (t *Telemetry) InFlight(delta int64) {
	if t == nil {
		return
	}
	t.inflight.Add(delta)
}

// Receiving adds delta to the number of work request bodies being received.
func (t *Telemetry) Receiving(delta int64) {
	if t == nil {
		return
	}
	t.receiving.Add(delta)
}

// Memory adds delta to the bytes held by requests in flight.
func (t *Telemetry) Memory(delta int64) {
	if t == nil {
		return
	}
	t.memory.Add(delta)
}

// Rejected counts a work request refused for reason.
func (t *Telemetry) Rejected(ctx context.Context, reason string) {
	if t == nil {
		return
	}
	t.rejected.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

// Panic counts a panic recovered at site.
func (t *Telemetry) Panic(ctx context.Context, site string) {
	if t == nil {
		return
	}
	t.panics.Add(ctx, 1, metric.WithAttributes(attribute.String("site", site)))
}

// BatchCounts are one model version's dynamic batching counters since it
// loaded (package batching's Stats), read at each scrape.
type BatchCounts struct {
	Model, Version     string
	Requests, Rejected int64
	Waiting            int64
	QueueSeconds       float64         // summed over the batched requests
	ComputeSeconds     float64         // summed over the executions
	Executions         map[int64]int64 // executions by batch size (rows)
}

// ObserveBatching exports what f returns at each scrape:
//
//	quantserve_batch_requests_total{model,version}          requests computed (batched or alone)
//	quantserve_batch_executions_total{model,version,size}   model executions by batch size
//	quantserve_batch_queue_seconds_total{model,version}     time requests waited for their batch
//	quantserve_batch_compute_seconds_total{model,version}   time the executions took
//	quantserve_batch_rejected_total{model,version}          refused: max_queue_size reached
//	quantserve_batch_waiting{model,version}                 requests in the queue now
//
// Mean batch size is rate(requests) / sum by (model, version) (rate(executions)).
// Only the first call on a Telemetry registers.
func (t *Telemetry) ObserveBatching(f func() []BatchCounts) error {
	if t == nil {
		return nil
	}
	var err error
	t.batchingOnce.Do(func() { err = t.observeBatching(f) })
	return err
}

func (t *Telemetry) observeBatching(f func() []BatchCounts) error {
	m := t.meter
	requests, err := m.Int64ObservableCounter("quantserve.batch.requests", metric.WithDescription("Requests computed on models with dynamic batching (batched or alone), by model and version"))
	if err != nil {
		return err
	}
	executions, err := m.Int64ObservableCounter("quantserve.batch.executions", metric.WithDescription("Model executions of models with dynamic batching, by model, version and batch size (rows)"))
	if err != nil {
		return err
	}
	queue, err := m.Float64ObservableCounter("quantserve.batch.queue", metric.WithUnit("s"), metric.WithDescription("Time batched requests waited in the queue for their execution, summed"))
	if err != nil {
		return err
	}
	compute, err := m.Float64ObservableCounter("quantserve.batch.compute", metric.WithUnit("s"), metric.WithDescription("Time the executions of models with dynamic batching took, summed"))
	if err != nil {
		return err
	}
	rejected, err := m.Int64ObservableCounter("quantserve.batch.rejected", metric.WithDescription("Requests refused with 503 because max_queue_size requests were waiting"))
	if err != nil {
		return err
	}
	waiting, err := m.Int64ObservableGauge("quantserve.batch.waiting", metric.WithDescription("Requests waiting in a dynamic batching queue"))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range f() {
			mv := []attribute.KeyValue{attribute.String("model", c.Model), attribute.String("version", c.Version)}
			attrs := metric.WithAttributes(mv...)
			o.ObserveInt64(requests, c.Requests, attrs)
			o.ObserveFloat64(queue, c.QueueSeconds, attrs)
			o.ObserveFloat64(compute, c.ComputeSeconds, attrs)
			o.ObserveInt64(rejected, c.Rejected, attrs)
			o.ObserveInt64(waiting, c.Waiting, attrs)
			for size, n := range c.Executions {
				o.ObserveInt64(executions, n, metric.WithAttributes(append(mv, attribute.Int64("size", size))...))
			}
		}
		return nil
	}, requests, executions, queue, compute, rejected, waiting)
	return err
}
