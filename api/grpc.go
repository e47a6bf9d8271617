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
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // requests may come gzip-compressed
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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

// DefaultGRPCMaxStreams bounds the calls a gRPC connection has open at
// once (HTTP/2's MAX_CONCURRENT_STREAMS); a client waits for one to end
// before it starts more.
const DefaultGRPCMaxStreams = 100

// The gRPC server's connection limits: a call's headers at most 64 KiB,
// as the HTTP server's; the handshake (TLS, HTTP/2) within 10 s;
// keepalive pings taken from a client at most every 10 s (more often, the
// connection is closed), and sent by the server after a minute without
// traffic, closing a connection that does not answer within 20 s; idle
// connections closed after 120 s, as HTTP's keep-alive connections are.
const (
	grpcMaxHeaderBytes    = 64 << 10
	grpcHandshakeTimeout  = 10 * time.Second
	grpcMinPingInterval   = 10 * time.Second
	grpcPingAfter         = time.Minute
	grpcPingTimeout       = 20 * time.Second
	grpcMaxConnectionIdle = 120 * time.Second
)

// GRPCServer returns a gRPC server with Triton's GRPCInferenceService (the
// Open Inference Protocol's RPCs and Triton's: grpc_triton.go,
// grpc_stream.go), the standard health service (grpc.health.v1) and
// server reflection registered, on HTTP's limits: messages up to
// --max-body-bytes once decompressed, charged to --max-inflight-bytes
// before they are decoded, received and answered under --request-timeout,
// at most DefaultGRPCMaxStreams calls open on a connection. extra options
// are added to the server's own (grpc.MaxConcurrentStreams for another
// bound); TLS is GRPCTLS.
func (srv *Server) GRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	s := srv.s
	conns := &grpcConns{}
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	var rest []grpc.ServerOption
	for _, o := range extra {
		if t, ok := o.(grpcTLS); ok {
			creds = credentials.NewTLS(t.cfg)
		} else {
			rest = append(rest, o)
		}
	}
	opts := append([]grpc.ServerOption{
		grpc.Creds(trackingCreds{TransportCredentials: creds, conns: conns}),
		grpc.ForceServerCodecV2(newGRPCCodec()),
		grpc.MaxRecvMsgSize(int(min(s.maxBody, math.MaxInt32))),
		grpc.MaxConcurrentStreams(DefaultGRPCMaxStreams),
		grpc.MaxHeaderListSize(grpcMaxHeaderBytes),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: grpcMinPingInterval, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: grpcMaxConnectionIdle, Time: grpcPingAfter, Timeout: grpcPingTimeout}),
		grpc.ChainUnaryInterceptor(s.grpcUnary),
		grpc.ChainStreamInterceptor(s.grpcStream),
	}, rest...)
	g := grpc.NewServer(opts...)
	g.RegisterService(inferenceDesc(), &inferenceService{s: s, conns: conns})
	g.RegisterService(withDecodeErrors(healthpb.Health_ServiceDesc), &healthService{s: s, poll: time.Second})
	reflection.Register(g)
	return g
}

// inferenceService implements GRPCInferenceService on the shared server
// (ModelInfer through modelInferHandler).
type inferenceService struct {
	grpcpb.UnimplementedGRPCInferenceServiceServer
	s     *server
	conns *grpcConns
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

// modelInfer is the gRPC front end of inferCore, the path HTTP's infer
// takes, for a message received whole: its bytes count against the memory
// budget, then what decoding it will allocate, counted from its encoding
// (a message past the budget is refused before it is decoded); a work
// slot is taken (or the call refused with Unavailable at once), the model
// runs under --request-timeout (and the client's deadline), and the slot
// goes back before the answer is encoded. The decoded message's bytes give
// way to its tensors'; the encoded answer's stay charged until the
// transport has written them (grpcAnswer). Outputs come back raw
// (raw_output_contents) when the request sent its inputs raw, as Triton's
// clients do, else in typed contents (FP16 and BF16 always raw).
func (g *inferenceService) modelInfer(ctx context.Context, in *inferMessage) (*grpcAnswer, error) {
	s := g.s
	received := time.Now()
	acct := &account{s: s, ctx: ctx}
	defer acct.release()
	defer in.free()
	msg, held, err := s.decodeInferMessage(acct, in)
	if err != nil {
		return nil, err
	}
	wctx, releaseSlot, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer wctx.cancel()
	defer releaseSlot()
	ctx = wctx
	c := &grpcInfer{ctx: ctx, conn: in.conn, msg: msg, msgHeld: held, raw: len(msg.GetRawInputContents()) > 0, acct: acct, releaseSlot: releaseSlot}
	if err := s.inferCore(ctx, msg.GetModelName(), msg.GetModelVersion(), received, c); err != nil {
		return nil, err
	}
	return c.answer, nil
}

// decodeInferMessage decodes a ModelInfer message into acct: its bytes
// as received (and their copy in one piece, when they came in several),
// then what decoding allocates, each charged before it is allocated. It
// returns the message with the bytes it holds of acct; the received bytes
// go back.
func (s *server) decodeInferMessage(acct *account, in *inferMessage) (*grpcpb.ModelInferRequest, int64, error) {
	wire := int64(in.data.Len())
	if err := acct.grow(wire); err != nil {
		return nil, 0, err
	}
	if len(in.data) > 1 {
		if err := acct.grow(wire); err != nil {
			return nil, 0, err
		}
		one := in.data.MaterializeToBuffer(mem.DefaultBufferPool())
		in.free()
		in.data = mem.BufferSlice{one}
		acct.shrink(wire)
	}
	var b []byte
	if len(in.data) == 1 {
		b = in.data[0].ReadOnlyData()
	}
	size, err := oip.MeasureGRPCInferRequest(b, s.budget.perRequest-acct.holding())
	if err != nil {
		return nil, 0, err
	}
	if err := acct.grow(size.Bytes); err != nil {
		return nil, 0, err
	}
	msg, err := oip.UnmarshalGRPCInferRequest(b)
	in.free()
	acct.shrink(wire)
	return msg, size.Bytes, err
}

// grpcInfer is the gRPC codec of an inference (inferCodec).
type grpcInfer struct {
	ctx         context.Context
	conn        *grpcConn
	msg         *grpcpb.ModelInferRequest
	msgHeld     int64 // the budget msg holds
	raw         bool  // the inputs came raw: so go the outputs
	acct        *account
	releaseSlot func()
	answer      *grpcAnswer
}

func (c *grpcInfer) decode() (*oip.InferRequest, error) { return oip.DecodeGRPCInferRequest(c.msg) }

func (c *grpcInfer) account() *account { return c.acct }

// hold counts the decoded tensors, which copy their elements: the message
// is done with, its bytes go back.
func (c *grpcInfer) hold(decoded []*tensor.Tensor) error {
	if err := c.acct.grow(tensorBytes(decoded)); err != nil {
		return err
	}
	c.acct.shrink(c.msgHeld)
	c.msg, c.msgHeld = nil, 0
	return nil
}

// encode gives the work slot back (the model has run) and encodes the
// answer, each copy charged before it is made: the message (the outputs'
// elements converted) and its encoding, which becomes the grpcAnswer's
// with its bytes of the budget.
func (c *grpcInfer) encode(req *oip.InferRequest, resp *oip.InferResponse) error {
	c.releaseSlot()
	copies := oip.GRPCResponseBytes(resp, c.raw)
	if err := c.acct.grow(copies); err != nil {
		return err
	}
	answer := oip.EncodeGRPCInferResponse(resp, c.raw)
	size := int64(proto.Size(answer))
	if err := c.acct.grow(size); err != nil {
		return err
	}
	data, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(make([]byte, 0, size), answer)
	if err != nil {
		return err
	}
	c.acct.shrink(copies)
	c.acct.handOver(size) // the answer's own, from here
	c.answer = c.acct.s.newGRPCAnswer(c.ctx, data, &account{s: c.acct.s, ctx: c.acct.ctx, held: size}, c.conn)
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
		// The drain is read before the status: once it has begun, the
		// status read after it is the drain's, which the call sends before
		// it ends (read the other way round, a drain beginning between
		// the two ended the call without it).
		draining := h.s.draining()
		st, _ := h.status(req.GetService())
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		if draining {
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

// grpcCall is what observing a call allocates, in one piece: its info,
// the context carrying it, and what its end records.
type grpcCall struct {
	info       reqInfo
	ctx        infoCtx
	s          *server
	start      time.Time
	fullMethod string
	probe      bool
	span       trace.Span
	own        bool // span is the call's own, to end
}

// grpcStart begins a call's observation: request id (from metadata
// x-request-id, returned in the response header), server span (parent
// from the trace context the propagator reads, when the call carries
// any), request info, as observe does for HTTP: the span's attributes
// are set only when it records. The call's end finishes it with the
// call's error.
func (s *server) grpcStart(ctx context.Context, fullMethod string) (context.Context, *grpcCall) {
	c := &grpcCall{s: s, start: time.Now(), fullMethod: fullMethod, probe: grpcProbes[fullMethod]}
	info := &c.info
	var given string
	if v := metadata.ValueFromIncomingContext(ctx, grpcMetadataRequestID); len(v) > 0 {
		given = v[0]
	}
	info.id = requestID(given)
	grpc.SetHeader(ctx, metadata.MD{grpcMetadataRequestID: []string{info.id}})
	if s.carriesMD(ctx) {
		md, _ := metadata.FromIncomingContext(ctx)
		ctx = s.prop.Extract(ctx, metadataCarrier(md))
	}
	c.span = trace.SpanFromContext(ctx) // a probe's: nothing records it
	name := strings.TrimPrefix(fullMethod, "/")
	_, idsOnly := s.tracer.(idsOnlyTracer)
	c.own = !c.probe && !idsOnly
	switch {
	case c.probe, idsOnly: // an idsOnly span is started for the log line only (idsOf)
	default:
		service, method, _ := strings.Cut(name, "/")
		ctx, c.span = s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service), attribute.String("rpc.method", method),
			attribute.String("request.id", info.id)))
	}
	c.ctx = infoCtx{Context: ctx, info: info}
	return &c.ctx, c
}

// carriesMD tells whether a call's metadata holds any key the propagator
// reads (carries, for gRPC).
func (s *server) carriesMD(ctx context.Context) bool {
	for _, k := range s.propMD {
		if len(metadata.ValueFromIncomingContext(ctx, k)) > 0 {
			return true
		}
	}
	return false
}

// end finishes a call's observation with its error, which it returns as
// the gRPC status the client gets: span, metrics, log line.
func (c *grpcCall) end(err error) error {
	s, ctx, info := c.s, context.Context(&c.ctx), &c.info
	d := time.Since(c.start)
	if err != nil {
		err = s.grpcStatus(ctx, c.fullMethod, err)
	}
	code := status.Code(err)
	if c.own {
		if c.span.IsRecording() {
			c.span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
			if code != codes.OK {
				c.span.SetStatus(otelcodes.Error, status.Convert(err).Message())
			}
		}
		c.span.End()
	}
	s.tel.GRPCRequest(ctx, c.fullMethod, code.String(), d)
	if info.model != "" {
		s.tel.InferenceLatency(ctx, info.model, info.version, d)
	}
	if skipped, ok := s.logLine(ctx, c.probe, code != codes.OK, c.start); ok {
		s.logRequest(ctx, c.probe, s.idsOf(ctx, c.probe, strings.TrimPrefix(c.fullMethod, "/")), []slog.Attr{slog.String("method", "grpc"), slog.String("route", c.fullMethod)},
			info.model, info.version, slog.String("status", code.String()), d, info.id, skipped)
	}
	return err
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
	ctx, call := s.grpcStart(ctx, info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, s.panicked(ctx, slog.String("method", info.FullMethod), p)
		}
		if a, ok := resp.(*grpcAnswer); ok && a != nil && err != nil { // an answer that will not be sent
			a.release()
		}
		err = call.end(err)
	}()
	return handler(ctx, req)
}

func (s *server) grpcStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, call := s.grpcStart(ss.Context(), info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(ctx, slog.String("method", info.FullMethod), p)
		}
		err = call.end(err)
	}()
	return handler(srv, &observedStream{ServerStream: ss, ctx: ctx})
}

// observedStream carries the call's context (span, request info) to a
// stream handler, and answers a message that does not decode with
// InvalidArgument.
type observedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (o *observedStream) Context() context.Context { return o.ctx }

func (o *observedStream) RecvMsg(m any) error {
	if in, ok := m.(*inferMessage); ok { // kept as received (ModelStreamInfer)
		return o.ServerStream.RecvMsg(in)
	}
	return decodeInto(o.ServerStream.RecvMsg, m)
}
