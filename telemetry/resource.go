package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) does not name the service.
const DefaultServiceName = "quantserve"

// Resource describes the process to traces and metrics alike (the spans'
// resource, and target_info in /metrics): service.name quantserve unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names it, service.version,
// the attributes of OTEL_RESOURCE_ATTRIBUTES, and the SDK.
func Resource(ctx context.Context, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return res, nil
}

// Propagator returns the propagators OTEL_PROPAGATORS names (a comma
// separated list of tracecontext, baggage, b3, b3multi, jaeger, xray,
// ottrace, or none), by default tracecontext and baggage: how a request's
// trace context (traceparent, ...) is read from HTTP headers and gRPC
// metadata.
func Propagator(value string) (propagation.TextMapPropagator, error) {
	var names []string
	for _, n := range strings.Split(value, ",") {
		if n = strings.TrimSpace(strings.ToLower(n)); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		names = []string{"tracecontext", "baggage"}
	}
	p, err := autoprop.TextMapPropagator(names...)
	if err != nil {
		return nil, fmt.Errorf("OTEL_PROPAGATORS=%q: %w", value, err)
	}
	return p, nil
}
