package api

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// grpcTestServer serves opts over HTTP and gRPC, each on a real listener
// on 127.0.0.1, from one Server, and returns the server, the HTTP URL and
// a gRPC client generated from the protocol's proto.
func grpcTestServer(t *testing.T, opts Options, register ...func(*grpc.Server)) (*Server, string, grpcpb.GRPCInferenceServiceClient, *grpc.ClientConn) {
	t.Helper()
	return grpcTestServerWith(t, opts, nil, register...)
}

// grpcTestServerWith is grpcTestServer with options of the gRPC server.
func grpcTestServerWith(t *testing.T, opts Options, serverOpts []grpc.ServerOption, register ...func(*grpc.Server)) (*Server, string, grpcpb.GRPCInferenceServiceClient, *grpc.ClientConn) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	srv := New(opts)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPCServer(serverOpts...)
	for _, r := range register {
		r(g)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return srv, hs.URL, grpcpb.NewGRPCInferenceServiceClient(conn), conn
}

func mnistRepo() *repository.Repository {
	return repository.New(serverOptions(), repository.Source{Name: defaultmodel.Name, Version: 1, ONNX: defaultmodel.ONNX})
}

// wantCode checks that err is a gRPC status with code and a message
// mentioning each fragment.
func wantCode(t *testing.T, err error, code codes.Code, fragments ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Errorf("got %v, want code %v", err, code)
		return
	}
	for _, f := range fragments {
		if !strings.Contains(st.Message(), f) {
			t.Errorf("message %q does not mention %q", st.Message(), f)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestGRPCHealthAndMetadata(t *testing.T) {
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), Version: "test"})
	ctx := ctxT(t)
	if r, err := c.ServerLive(ctx, &grpcpb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Errorf("ServerLive: %v %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &grpcpb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Errorf("ServerReady: %v %v", r, err)
	}
	sm, err := c.ServerMetadata(ctx, &grpcpb.ServerMetadataRequest{})
	if err != nil || sm.Name != ServerName || sm.Version != "test" || !strings.Contains(strings.Join(sm.Extensions, ","), "model_repository") {
		t.Errorf("ServerMetadata: %v %v", sm, err)
	}
	if r, err := c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "mnist"}); err != nil || !r.Ready {
		t.Errorf("ModelReady: %v %v", r, err)
	}
	if r, err := c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "mnist", Version: "1"}); err != nil || !r.Ready {
		t.Errorf("ModelReady version 1: %v %v", r, err)
	}
	_, err = c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "mnist", Version: "7"})
	wantCode(t, err, codes.NotFound, "7")
	_, err = c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
	md, err := c.ModelMetadata(ctx, &grpcpb.ModelMetadataRequest{Name: "mnist"})
	if err != nil {
		t.Fatal(err)
	}
	want := &grpcpb.ModelMetadataResponse{Name: "mnist", Versions: []string{"1"}, Platform: "onnx_onnxv1",
		Inputs:     []*grpcpb.ModelMetadataResponse_TensorMetadata{{Name: "input", Datatype: "FP32", Shape: []int64{-1, 784}}},
		Outputs:    []*grpcpb.ModelMetadataResponse_TensorMetadata{{Name: "scores", Datatype: "FP32", Shape: []int64{-1, 10}}},
		Properties: map[string]string{"kernels": md.Properties["kernels"], "layers": "3", "int8_layers": "2"}}
	if !proto.Equal(md, want) || md.Properties["kernels"] == "" {
		t.Errorf("ModelMetadata:\n got %v\nwant %v", md, want)
	}
	_, err = c.ModelMetadata(ctx, &grpcpb.ModelMetadataRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
}

// digit is an input image with some ink, so the scores differ.
func digit() []float32 {
	x := make([]float32, 784)
	for i := range x {
		if i%28 > 10 && i%28 < 16 && i/28 > 5 && i/28 < 23 {
			x[i] = float32(i%7) / 6
		}
	}
	return x
}

// TestGRPCInferMatchesHTTP runs the same image through gRPC (raw and
// typed contents) and HTTP/JSON: the scores agree to the bit.
func TestGRPCInferMatchesHTTP(t *testing.T) {
	_, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	ctx := ctxT(t)
	x := digit()
	r := do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, x))
	if r.status != 200 {
		t.Fatalf("HTTP infer: %d %s", r.status, r.body)
	}
	var httpResp struct {
		Outputs []struct {
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(r.body, &httpResp); err != nil || len(httpResp.Outputs) != 1 || len(httpResp.Outputs[0].Data) != 10 {
		t.Fatalf("HTTP infer: %v %s", err, r.body)
	}
	want := httpResp.Outputs[0].Data

	raw := make([]byte, 0, 4*784)
	for _, v := range x {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	resp, err := c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: "mnist", Id: "r1",
		Inputs:           []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 784}}},
		RawInputContents: [][]byte{raw}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ModelName != "mnist" || resp.ModelVersion != "1" || resp.Id != "r1" || len(resp.Outputs) != 1 || len(resp.RawOutputContents) != 1 {
		t.Fatalf("raw infer: %v", resp)
	}
	if o := resp.Outputs[0]; o.Name != "scores" || o.Datatype != "FP32" || !equalInts(o.Shape, []int64{1, 10}) || o.Contents != nil {
		t.Errorf("raw infer output %v", o)
	}
	if len(resp.RawOutputContents[0]) != 40 {
		t.Fatalf("raw output of %d bytes", len(resp.RawOutputContents[0]))
	}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(resp.RawOutputContents[0][4*i:])); got != w {
			t.Errorf("raw scores[%d] = %v, HTTP says %v", i, got, w)
		}
	}

	resp, err = c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: "mnist", ModelVersion: "1",
		Inputs:  []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: x}}},
		Outputs: []*grpcpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "scores"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.RawOutputContents) != 0 || len(resp.Outputs) != 1 || resp.Outputs[0].Contents == nil {
		t.Fatalf("typed infer: %v", resp)
	}
	got := resp.Outputs[0].Contents.Fp32Contents
	if len(got) != 10 {
		t.Fatalf("typed scores %v", got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("typed scores[%d] = %v, HTTP says %v", i, got[i], w)
		}
	}

	// gRPC inferences count in Triton's statistics beside HTTP's
	_, err = c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: "mnist",
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 3}, Contents: &grpcpb.InferTensorContents{Fp32Contents: x[:3]}}}})
	wantCode(t, err, codes.InvalidArgument)
	var stats statsAnswer
	if r := do(t, "GET", url+"/v2/models/mnist/stats", ""); r.status != 200 || json.Unmarshal(r.body, &stats) != nil || len(stats.ModelStats) != 1 {
		t.Fatalf("stats: %d %s", r.status, r.body)
	}
	if st := stats.ModelStats[0]; st.InferenceCount != 3 || st.InferenceStats.Success.Count != 3 || st.InferenceStats.Fail.Count != 1 {
		t.Errorf("stats after 1 HTTP and 3 gRPC inferences (1 failed): %+v", st)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// datatypeCases are tensors of every datatype a model can take, with
// their extremes, as typed contents and as raw bytes.
func datatypeCases() map[tensor.DataType]*grpcpb.InferTensorContents {
	return map[tensor.DataType]*grpcpb.InferTensorContents{
		tensor.Bool:    {BoolContents: []bool{true, false, true, true, false, false}},
		tensor.Uint8:   {UintContents: []uint32{0, 1, 127, 128, 254, 255}},
		tensor.Uint16:  {UintContents: []uint32{0, 1, 255, 256, 65534, 65535}},
		tensor.Uint32:  {UintContents: []uint32{0, 1, 1 << 31, 12345678, math.MaxUint32 - 1, math.MaxUint32}},
		tensor.Uint64:  {Uint64Contents: []uint64{0, 1, 1 << 53, 1<<53 + 1, math.MaxUint64 - 1, math.MaxUint64}},
		tensor.Int8:    {IntContents: []int32{-128, -1, 0, 1, 126, 127}},
		tensor.Int16:   {IntContents: []int32{-32768, -1, 0, 1, 32766, 32767}},
		tensor.Int32:   {IntContents: []int32{math.MinInt32, -1, 0, 1, 16777217, math.MaxInt32}},
		tensor.Int64:   {Int64Contents: []int64{math.MinInt64, -1, 0, 16777217, 1<<53 + 1, math.MaxInt64}},
		tensor.Float32: {Fp32Contents: []float32{-math.MaxFloat32, -1.5, 0, math.SmallestNonzeroFloat32, 0.1, math.MaxFloat32}},
		tensor.Float64: {Fp64Contents: []float64{-math.MaxFloat64, -1.5, 0, math.SmallestNonzeroFloat64, 0.1, math.MaxFloat64}},
	}
}

// rawOf is the little-endian layout of typed contents of dt.
func rawOf(dt tensor.DataType, c *grpcpb.InferTensorContents) []byte {
	var b []byte
	le := binary.LittleEndian
	for _, v := range c.BoolContents {
		if v {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	for _, v := range c.UintContents {
		switch dt.Size() {
		case 1:
			b = append(b, byte(v))
		case 2:
			b = le.AppendUint16(b, uint16(v))
		default:
			b = le.AppendUint32(b, v)
		}
	}
	for _, v := range c.IntContents {
		switch dt.Size() {
		case 1:
			b = append(b, byte(int8(v)))
		case 2:
			b = le.AppendUint16(b, uint16(int16(v)))
		default:
			b = le.AppendUint32(b, uint32(v))
		}
	}
	for _, v := range c.Uint64Contents {
		b = le.AppendUint64(b, v)
	}
	for _, v := range c.Int64Contents {
		b = le.AppendUint64(b, uint64(v))
	}
	for _, v := range c.Fp32Contents {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	for _, v := range c.Fp64Contents {
		b = le.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// TestGRPCEveryDatatype passes each datatype's extremes through an
// Identity model, as typed contents and as raw bytes: they come back
// exactly, in the form they were sent.
func TestGRPCEveryDatatype(t *testing.T) {
	cases := datatypeCases()
	var sources []repository.Source
	for dt := range cases {
		sources = append(sources, repository.Source{Name: "id_" + strings.ToLower(dt.String()), Version: 1, ONNX: onnxbuild.Identity(dt, []int{2, 3})})
	}
	_, _, c, _ := grpcTestServer(t, Options{Repository: repository.New(serverOptions(), sources...)})
	ctx := ctxT(t)
	for dt, contents := range cases {
		model := "id_" + strings.ToLower(dt.String())
		in := &grpcpb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: dt.String(), Shape: []int64{2, 3}, Contents: contents}
		resp, err := c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: model, Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{in}})
		if err != nil {
			t.Errorf("%v typed: %v", dt, err)
			continue
		}
		if len(resp.Outputs) != 1 || resp.Outputs[0].Datatype != dt.String() || !proto.Equal(resp.Outputs[0].Contents, contents) || len(resp.RawOutputContents) != 0 {
			t.Errorf("%v typed: sent %v, got %v", dt, contents, resp)
		}
		raw := rawOf(dt, contents)
		in = &grpcpb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: dt.String(), Shape: []int64{2, 3}}
		resp, err = c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: model, Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{in}, RawInputContents: [][]byte{raw}})
		if err != nil {
			t.Errorf("%v raw: %v", dt, err)
			continue
		}
		if len(resp.RawOutputContents) != 1 || string(resp.RawOutputContents[0]) != string(raw) || resp.Outputs[0].Contents != nil {
			t.Errorf("%v raw: sent %x, got %v", dt, raw, resp)
		}
	}
}

// TestGRPCErrors: bad requests get the code the one mapping gives their
// error (CodeOf, then GRPCCode), with a message saying what to change,
// and the server keeps serving.
func TestGRPCErrors(t *testing.T) {
	srv, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), MaxBodyBytes: 1 << 20, MaxInflightBytes: 512 << 10})
	ctx := ctxT(t)
	input := func(dt string, shape []int64, contents *grpcpb.InferTensorContents) *grpcpb.ModelInferRequest {
		return &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: dt, Shape: shape, Contents: contents}}}
	}
	good := func() *grpcpb.ModelInferRequest {
		return input("FP32", []int64{1, 784}, &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)})
	}
	cases := []struct {
		name      string
		req       *grpcpb.ModelInferRequest
		code      codes.Code
		fragments []string
	}{
		{"unknown model", func() *grpcpb.ModelInferRequest { r := good(); r.ModelName = "nope"; return r }(), codes.NotFound, []string{"nope"}},
		{"unknown version", func() *grpcpb.ModelInferRequest { r := good(); r.ModelVersion = "9"; return r }(), codes.NotFound, []string{"9"}},
		{"no inputs", &grpcpb.ModelInferRequest{ModelName: "mnist"}, codes.InvalidArgument, []string{"no inputs"}},
		{"count", input("FP32", []int64{1, 784}, &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 3)}), codes.InvalidArgument, []string{"fp32_contents has 3 elements", "784"}},
		{"field", input("FP32", []int64{1, 2}, &grpcpb.InferTensorContents{Int64Contents: []int64{1, 2}}), codes.InvalidArgument, []string{"int64_contents", "fp32_contents"}},
		{"datatype", input("FP33", []int64{1}, nil), codes.InvalidArgument, []string{"FP33"}},
		{"negative dim", input("FP32", []int64{-1, 784}, nil), codes.InvalidArgument, []string{"-1"}},
		{"huge shape", input("FP32", []int64{1 << 30, 1 << 30}, nil), codes.InvalidArgument, []string{"too many elements"}},
		{"range", input("INT8", []int64{1}, &grpcpb.InferTensorContents{IntContents: []int32{300}}), codes.InvalidArgument, []string{"300", "INT8"}},
		{"wrong input type", input("INT64", []int64{1, 784}, &grpcpb.InferTensorContents{Int64Contents: make([]int64, 784)}), codes.InvalidArgument, []string{"input"}},
		{"wrong shape", input("FP32", []int64{1, 3}, &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 3)}), codes.InvalidArgument, []string{"input"}},
		{"raw count", func() *grpcpb.ModelInferRequest {
			r := good()
			r.Inputs[0].Contents = nil
			r.RawInputContents = [][]byte{{1}, {2}}
			return r
		}(), codes.InvalidArgument, []string{"raw_input_contents has 2 entries for 1 inputs"}},
		{"raw size", func() *grpcpb.ModelInferRequest {
			r := good()
			r.Inputs[0].Contents = nil
			r.RawInputContents = [][]byte{make([]byte, 5)}
			return r
		}(), codes.InvalidArgument, []string{"5 bytes", "3136"}},
		{"raw and typed", func() *grpcpb.ModelInferRequest {
			r := good()
			r.RawInputContents = [][]byte{make([]byte, 3136)}
			return r
		}(), codes.InvalidArgument, []string{"one or the other"}},
		{"duplicate input", func() *grpcpb.ModelInferRequest { r := good(); r.Inputs = append(r.Inputs, r.Inputs[0]); return r }(), codes.InvalidArgument, []string{"more than once"}},
		{"unknown output", func() *grpcpb.ModelInferRequest {
			r := good()
			r.Outputs = []*grpcpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "nope"}}
			return r
		}(), codes.InvalidArgument, []string{"nope"}},
		{"duplicate output", func() *grpcpb.ModelInferRequest {
			r := good()
			r.Outputs = []*grpcpb.ModelInferRequest_InferRequestedOutputTensor{{Name: "scores"}, {Name: "scores"}}
			return r
		}(), codes.InvalidArgument, []string{"more than once"}},
		{"over --max-body-bytes", input("FP32", []int64{1, 300000}, &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 300000)}), codes.ResourceExhausted, []string{"larger than max"}},
		{"over --max-inflight-bytes", func() *grpcpb.ModelInferRequest {
			r := good()
			r.Inputs[0].Contents = nil
			r.Inputs[0].Shape = []int64{1 << 20, 784}
			r.RawInputContents = [][]byte{make([]byte, 600<<10)} // refused on its size before its shape
			return r
		}(), codes.ResourceExhausted, []string{"--max-inflight-bytes"}},
	}
	for _, tc := range cases {
		_, err := c.ModelInfer(ctx, tc.req)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, tc.fragments...) })
	}

	// Work slots are shared with HTTP: with every slot taken, gRPC is
	// refused with Unavailable and a retry-after trailer, HTTP with 503.
	for i := 0; i < cap(srv.s.inflight); i++ {
		srv.s.inflight <- struct{}{}
	}
	var trailer metadata.MD
	_, err := c.ModelInfer(ctx, good(), grpc.Trailer(&trailer))
	wantCode(t, err, codes.Unavailable, "busy", "--max-inflight")
	if got := trailer.Get("retry-after"); len(got) != 1 || got[0] != "1" {
		t.Errorf("retry-after trailer %q", got)
	}
	wantError(t, do(t, "POST", url+"/v2/models/mnist/infer", inferBody("input", "FP32", []int{1, 784}, make([]float32, 784))), 503, "busy")
	for i := 0; i < cap(srv.s.inflight); i++ {
		<-srv.s.inflight
	}
	if _, err := c.ModelInfer(ctx, good()); err != nil {
		t.Errorf("after the errors: %v", err)
	}
}

func TestGRPCRequestTimeout(t *testing.T) {
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), RequestTimeout: time.Nanosecond, IOTimeout: time.Minute})
	_, err := c.ModelInfer(ctxT(t), &grpcpb.ModelInferRequest{ModelName: "mnist",
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}})
	wantCode(t, err, codes.DeadlineExceeded, "--request-timeout")
}

// TestGRPCHealthFollowsReadiness: grpc.health.v1 answers SERVING for the
// server ("", "ready", the inference service) while ready, NOT_SERVING
// once draining; "live" stays SERVING; a watch sees the change and ends.
func TestGRPCHealthFollowsReadiness(t *testing.T) {
	var draining atomic.Bool
	_, _, c, conn := grpcTestServer(t, Options{Repository: mnistRepo(), Draining: draining.Load})
	h := healthpb.NewHealthClient(conn)
	ctx := ctxT(t)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("Check(%q): %v", service, err)
		}
		return r.Status
	}
	for _, svc := range []string{"", "ready", "live", "inference.GRPCInferenceService"} {
		if st := check(svc); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v while ready", svc, st)
		}
	}
	_, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
	list, err := h.List(ctx, &healthpb.HealthListRequest{})
	if err != nil || len(list.Statuses) != 4 || list.Statuses["live"].GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("List: %v %v", list, err)
	}

	watch, err := h.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch message: %v %v", r, err)
	}
	draining.Store(true)
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch after the drain began: %v %v", r, err)
	}
	_, err = watch.Recv()
	wantCode(t, err, codes.Unavailable, "shutting down")
	for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{"": healthpb.HealthCheckResponse_NOT_SERVING,
		"ready": healthpb.HealthCheckResponse_NOT_SERVING, "live": healthpb.HealthCheckResponse_SERVING} {
		if st := check(svc); st != want {
			t.Errorf("Check(%q) = %v while draining, want %v", svc, st, want)
		}
	}
	if r, err := c.ServerReady(ctx, &grpcpb.ServerReadyRequest{}); err != nil || r.Ready {
		t.Errorf("ServerReady while draining: %v %v", r, err)
	}
}

// TestGRPCRequestID: the response header carries the client's valid
// x-request-id, or a new one.
func TestGRPCRequestID(t *testing.T) {
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-request-id", "client-id-42")
	if _, err := c.ServerLive(ctx, &grpcpb.ServerLiveRequest{}, grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if got := header.Get("x-request-id"); len(got) != 1 || got[0] != "client-id-42" {
		t.Errorf("x-request-id %q, want the client's", got)
	}
	ctx = metadata.AppendToOutgoingContext(ctxT(t), "x-request-id", strings.Repeat("x", 200))
	if _, err := c.ServerLive(ctx, &grpcpb.ServerLiveRequest{}, grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if got := header.Get("x-request-id"); len(got) != 1 || len(got[0]) == 0 || len(got[0]) > maxRequestIDLen {
		t.Errorf("x-request-id %q for an over-long client id", got)
	}
}

// TestGRPCReflection: the server lists its services, so grpcurl and
// other tools work without the proto file.
func TestGRPCReflection(t *testing.T) {
	_, _, _, conn := grpcTestServer(t, Options{Repository: mnistRepo()})
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	for _, want := range []string{"inference.GRPCInferenceService", "grpc.health.v1.Health"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, not %s", names, want)
		}
	}
}

// BenchmarkInferFrontEnds runs the embedded model on one and on 64 images
// through each front end of one server: HTTP with JSON, gRPC with typed
// contents, gRPC with raw contents. Run with -count to interleave them.
func BenchmarkInferFrontEnds(b *testing.B) {
	srv := New(Options{Repository: mnistRepo(), Logger: quietLog()})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	g := srv.GRPCServer()
	go g.Serve(ln)
	defer g.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := grpcpb.NewGRPCInferenceServiceClient(conn)
	ctx := context.Background()
	for _, rows := range []int{1, 64} {
		x := make([]float32, rows*784)
		for i := range x {
			x[i] = float32(i%255) / 255
		}
		body := inferBody("input", "FP32", []int{rows, 784}, x)
		raw := make([]byte, 0, 4*len(x))
		for _, v := range x {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
		in := []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{int64(rows), 784}}}
		typed := &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
			Name: "input", Datatype: "FP32", Shape: []int64{int64(rows), 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: x}}}}
		rawReq := &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: in, RawInputContents: [][]byte{raw}}
		b.Run(fmt.Sprintf("http-json/rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			client := &http.Client{}
			for b.Loop() {
				resp, err := client.Post(hs.URL+"/v2/models/mnist/infer", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
		for name, req := range map[string]*grpcpb.ModelInferRequest{"grpc-typed": typed, "grpc-raw": rawReq} {
			b.Run(fmt.Sprintf("%s/rows=%d", name, rows), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.ModelInfer(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestReadmeGRPCExample sends examples/mnist-digit-grpc.json, the
// protobuf JSON the README's grpcurl example sends, and expects a 7 with
// the same scores as the README's HTTP example.
func TestReadmeGRPCExample(t *testing.T) {
	data, err := os.ReadFile("../examples/mnist-digit-grpc.json")
	if err != nil {
		t.Fatal(err)
	}
	var req grpcpb.ModelInferRequest
	if err := protojson.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	_, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	resp, err := c.ModelInfer(ctxT(t), &req)
	if err != nil {
		t.Fatal(err)
	}
	scores := resp.GetOutputs()[0].GetContents().GetFp32Contents()
	if len(scores) != 10 || slices.Index(scores, slices.Max(scores)) != 7 || resp.Id != "digit-7" {
		t.Fatalf("README gRPC example: %v", resp)
	}
	body, err := os.ReadFile("../examples/mnist-digit.json")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", url+"/v2/models/mnist/infer", string(body))
	var httpResp struct{ Outputs []struct{ Data []float32 } }
	if err := json.Unmarshal(r.body, &httpResp); err != nil || !slices.Equal(httpResp.Outputs[0].Data, scores) {
		t.Errorf("HTTP example scores %s, gRPC %v", r.body, scores)
	}
}
