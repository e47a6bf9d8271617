package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/quantserve/quantserve/oip"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

// Server serves the Open Inference Protocol over HTTP (Handler) and gRPC
// (GRPCServer) with one set of limits: the two front ends share the work
// slots, the memory budget, the request deadline, the model execution
// path and the error mapping.
type Server struct{ s *server }

// New returns a server for opts.
func New(opts Options) *Server { return &Server{s: newServer(opts)} }

// Handler returns the HTTP handler serving every route.
func (srv *Server) Handler() http.Handler { return srv.s.routes() }

// grpcMetadataRequestID is the metadata key of the request id over gRPC.
const grpcMetadataRequestID = "x-request-id"

// GRPC health service names: "" and "ready" (and the inference service's
// own name) follow readiness and the drain, as /v2/health/ready does;
// "live" is SERVING while the process serves, as /v2/health/live.
const (
	HealthReady = "ready"
	HealthLive  = "live"
)

// GRPCServer returns a gRPC server with the Open Inference Protocol's
// GRPCInferenceService, the standard health service (grpc.health.v1) and
// server reflection registered, its messages bounded by --max-body-bytes.
// extra options (TLS credentials) are added to the server's own.
func (srv *Server) GRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	s := srv.s
	opts := append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(s.maxBody, math.MaxInt32))),
		grpc.ChainUnaryInterceptor(s.grpcUnary),
		grpc.ChainStreamInterceptor(s.grpcStream),
		// idle connections close as HTTP's keep-alive connections do
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 120 * time.Second}),
	}, extra...)
	g := grpc.NewServer(opts...)
	grpcpb.RegisterGRPCInferenceServiceServer(g, &inferenceService{s: s})
	healthpb.RegisterHealthServer(g, &healthService{s: s, poll: time.Second})
	reflection.Register(g)
	return g
}

// inferenceService implements GRPCInferenceService on the shared server.
type inferenceService struct {
	grpcpb.UnimplementedGRPCInferenceServiceServer
	s *server
}

func (g *inferenceService) ServerLive(context.Context, *grpcpb.ServerLiveRequest) (*grpcpb.ServerLiveResponse, error) {
	return &grpcpb.ServerLiveResponse{Live: true}, nil
}

func (g *inferenceService) ServerReady(context.Context, *grpcpb.ServerReadyRequest) (*grpcpb.ServerReadyResponse, error) {
	return &grpcpb.ServerReadyResponse{Ready: g.s.isReady()}, nil
}

// isReady is what readiness reports over HTTP and gRPC: every model
// loaded, and not draining.
func (s *server) isReady() bool { return s.repo.Ready() && !s.draining() }

// ModelReady answers ready for a model version being served; an unknown
// model or version, or one that failed to load, is NotFound with the
// reason, as HTTP answers 404.
func (g *inferenceService) ModelReady(ctx context.Context, req *grpcpb.ModelReadyRequest) (*grpcpb.ModelReadyResponse, error) {
	_, _, release, err := g.s.repo.Get(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	release()
	return &grpcpb.ModelReadyResponse{Ready: true}, nil
}

func (g *inferenceService) ServerMetadata(context.Context, *grpcpb.ServerMetadataRequest) (*grpcpb.ServerMetadataResponse, error) {
	return &grpcpb.ServerMetadataResponse{Name: ServerName, Version: g.s.version, Extensions: g.s.extensions()}, nil
}

// ModelMetadata answers what GET /v2/models/{m}[/versions/{v}] does;
// properties hold its parameters as strings (the kernel table, the layer
// counts, the config's parameters).
func (g *inferenceService) ModelMetadata(ctx context.Context, req *grpcpb.ModelMetadataRequest) (*grpcpb.ModelMetadataResponse, error) {
	e, v, release, err := g.s.repo.Get(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	defer release()
	m := modelMetadataOf(e, v)
	md := &grpcpb.ModelMetadataResponse{Name: m.Name, Platform: m.Platform, Versions: m.Versions, Properties: map[string]string{}}
	for _, t := range m.Inputs {
		md.Inputs = append(md.Inputs, grpcTensorMetadata(t))
	}
	for _, t := range m.Outputs {
		md.Outputs = append(md.Outputs, grpcTensorMetadata(t))
	}
	for k, val := range m.Parameters {
		md.Properties[k] = fmt.Sprint(val)
	}
	return md, nil
}

func grpcTensorMetadata(t oip.TensorMetadata) *grpcpb.ModelMetadataResponse_TensorMetadata {
	shape := make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = int64(d)
	}
	return &grpcpb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: shape}
}

// ModelInfer is the gRPC front end of inferCore, the path HTTP's infer
// takes: the message's tensors count against the memory budget, a work
// slot is taken (or the call refused with Unavailable at once), the model
// runs under --request-timeout (and the client's deadline), and the slot
// goes back before the answer is encoded. Outputs come back raw
// (raw_output_contents) when the request sent its inputs raw, as Triton's
// clients do, else in typed contents (FP16 and BF16 always raw).
func (g *inferenceService) ModelInfer(ctx context.Context, req *grpcpb.ModelInferRequest) (*grpcpb.ModelInferResponse, error) {
	s := g.s
	received := time.Now() // gRPC received the whole message before this call
	acct := &account{s: s, ctx: ctx}
	defer func() { acct.shrink(acct.held) }()
	// The message, received whole by gRPC (at most --max-body-bytes),
	// holds its tensors' bytes until the call ends.
	if err := acct.grow(oip.GRPCRequestBytes(req)); err != nil {
		return nil, err
	}
	ctx, cancel, releaseSlot, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer releaseSlot()
	c := &grpcInfer{msg: req, acct: acct, releaseSlot: releaseSlot}
	if err := s.inferCore(ctx, req.GetModelName(), req.GetModelVersion(), received, c); err != nil {
		return nil, err
	}
	return c.answer, nil
}

// grpcInfer is the gRPC codec of an inference (inferCodec).
type grpcInfer struct {
	msg         *grpcpb.ModelInferRequest
	acct        *account
	releaseSlot func()
	answer      *grpcpb.ModelInferResponse
}

func (c *grpcInfer) decode() (*oip.InferRequest, error) { return oip.DecodeGRPCInferRequest(c.msg) }

// hold counts the decoded tensors on top of the message, which gRPC holds
// until the call ends.
func (c *grpcInfer) hold(decoded []*tensor.Tensor) error { return c.acct.grow(tensorBytes(decoded)) }

// encode gives the work slot back (the model has run) and converts the
// answer to its message.
func (c *grpcInfer) encode(req *oip.InferRequest, resp *oip.InferResponse) error {
	c.releaseSlot()
	c.answer = oip.EncodeGRPCInferResponse(resp, len(c.msg.GetRawInputContents()) > 0)
	return nil
}

// healthService implements grpc.health.v1 from readiness and the drain.
type healthService struct {
	healthpb.UnimplementedHealthServer
	s    *server
	poll time.Duration // how often Watch looks for a change
}

var healthServices = []string{"", HealthReady, HealthLive, grpcpb.GRPCInferenceService_ServiceDesc.ServiceName}

func (h *healthService) status(service string) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	switch service {
	case HealthLive:
		return healthpb.HealthCheckResponse_SERVING, true
	case "", HealthReady, grpcpb.GRPCInferenceService_ServiceDesc.ServiceName:
		if h.s.isReady() {
			return healthpb.HealthCheckResponse_SERVING, true
		}
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
}

func (h *healthService) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, ok := h.status(req.GetService())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown health service %q: known are %q", req.GetService(), healthServices)
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *healthService) List(ctx context.Context, req *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	resp := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, name := range healthServices {
		st, _ := h.status(name)
		resp.Statuses[name] = &healthpb.HealthCheckResponse{Status: st}
	}
	return resp, nil
}

// Watch sends the service's status, then each change. Once the server
// drains it sends NOT_SERVING (for services that follow readiness) and
// ends the call with Unavailable, so a graceful stop does not wait on
// watchers; clients retry elsewhere.
func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		st, _ := h.status(req.GetService())
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		if h.s.draining() {
			return status.Error(codes.Unavailable, "the server is shutting down")
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-tick.C:
		}
	}
}

// metadataCarrier reads and writes W3C trace context in gRPC metadata.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// grpcStart begins a call's observation: request id (from metadata
// x-request-id, returned in the response header), server span (parent
// from traceparent), request info. end finishes it with the call's error.
func (s *server) grpcStart(ctx context.Context, fullMethod string) (context.Context, func(err error) error) {
	start := time.Now()
	md, _ := metadata.FromIncomingContext(ctx)
	info := &reqInfo{id: requestID(metadataCarrier(md).Get(grpcMetadataRequestID))}
	grpc.SetHeader(ctx, metadata.Pairs(grpcMetadataRequestID, info.id))
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	ctx = propagator.Extract(ctx, metadataCarrier(md))
	ctx, span := s.tracer.Start(ctx, strings.TrimPrefix(fullMethod, "/"), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service), attribute.String("rpc.method", method),
		attribute.String("request.id", info.id)))
	ctx = context.WithValue(ctx, reqInfoKey{}, info)
	return ctx, func(err error) error {
		d := time.Since(start)
		if err != nil {
			err = s.grpcStatus(ctx, fullMethod, err)
		}
		code := status.Code(err)
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
		if code != codes.OK {
			span.SetStatus(otelcodes.Error, status.Convert(err).Message())
		}
		span.End()
		s.tel.GRPCRequest(ctx, fullMethod, code.String(), d)
		if info.model != "" {
			s.tel.InferenceLatency(ctx, info.model, info.version, d)
		}
		s.logRequest(ctx, []slog.Attr{slog.String("method", "grpc"), slog.String("route", fullMethod)},
			info.model, info.version, slog.String("status", code.String()), d, info.id)
		return err
	}
}

// grpcStatus converts an error of the api's handlers into a gRPC status
// with the code CodeOf gives it; statuses gRPC made pass through.
func (s *server) grpcStatus(ctx context.Context, fullMethod string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := CodeOf(err)
	msg := errorMessage(code, err)
	var pe *PanicError
	if code == CodeInternal && !errors.As(err, &pe) {
		s.log.ErrorContext(ctx, "request failed", "method", fullMethod, "err", err)
	}
	st := status.New(code.GRPCCode(), msg)
	if code == CodeUnavailable {
		grpc.SetTrailer(ctx, metadata.Pairs("retry-after", strconv.Itoa(retryAfter(err))))
	}
	return st.Err()
}

func (s *server) grpcUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	ctx, end := s.grpcStart(ctx, info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, s.panicked(ctx, slog.String("method", info.FullMethod), p)
		}
		err = end(err)
	}()
	return handler(ctx, req)
}

func (s *server) grpcStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, end := s.grpcStart(ss.Context(), info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(ctx, slog.String("method", info.FullMethod), p)
		}
		err = end(err)
	}()
	return handler(srv, &observedStream{ServerStream: ss, ctx: ctx})
}

// observedStream carries the call's context (span, request info) to a
// stream handler.
type observedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (o *observedStream) Context() context.Context { return o.ctx }
