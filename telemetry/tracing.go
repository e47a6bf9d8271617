package telemetry

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is where request spans go.
type Tracing struct {
	// Provider starts the spans; without an exporter it gives them ids
	// (for the request log) and records nothing.
	Provider trace.TracerProvider
	// Exporter describes the export: "none", or "otlp (grpc)" or
	// "otlp (http/protobuf)" with its endpoint.
	Exporter string
	// Propagator reads a request's trace context from its headers or
	// metadata (OTEL_PROPAGATORS).
	Propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// NewTracing sets up tracing from the standard OpenTelemetry environment
// variables, read with getenv:
//
//   - spans are exported over OTLP when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//     or OTEL_EXPORTER_OTLP_ENDPOINT is set, and neither OTEL_SDK_DISABLED
//     is true nor OTEL_TRACES_EXPORTER is none (its other values but
//     otlp are refused);
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
//     chooses grpc or http/protobuf (the default);
//   - the exporter reads the rest itself from the process's environment
//     (headers, TLS certificates, timeout, compression, ...), the SDK its
//     sampler (OTEL_TRACES_SAMPLER, default parentbased_always_on) and
//     batching (OTEL_BSP_*), the resource OTEL_SERVICE_NAME (default
//     quantserve) and OTEL_RESOURCE_ATTRIBUTES (Resource);
//   - OTEL_PROPAGATORS chooses how trace context is read (Propagator).
//
// Without an endpoint nothing is exported and nothing is recorded.
func NewTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	prop, err := Propagator(getenv("OTEL_PROPAGATORS"))
	if err != nil {
		return nil, err
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch exp := strings.TrimSpace(strings.ToLower(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "", "otlp":
	case "none":
		endpoint = ""
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: quantserve exports traces over otlp only (or none)", exp)
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		endpoint = ""
	}
	if endpoint == "" {
		return &Tracing{Provider: IDsOnlyTracerProvider(), Exporter: "none", Propagator: prop}, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q: grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := Resource(ctx, version)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Exporter: "otlp (" + protocol + ") to " + endpoint, Propagator: prop, shutdown: tp.Shutdown}, nil
}

var idsOnly = sync.OnceValue(func() trace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
})

// IDsOnlyTracerProvider returns a provider whose spans have trace and span
// ids (a client's trace id when it sent a traceparent) but are never
// recorded or exported: the request log names the trace at the cost of
// the ids alone.
func IDsOnlyTracerProvider() trace.TracerProvider { return idsOnly() }
