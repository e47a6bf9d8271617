package api

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// wireBytes is a message already encoded, sent as it is by rawCodec.
type wireBytes []byte

// rawCodec is a client codec that sends wireBytes unchanged: messages no
// protobuf library would write.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(wireBytes); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

// sendRaw calls method with b as its request message.
func sendRaw(ctx context.Context, conn *grpc.ClientConn, method string, b []byte, reply any, opts ...grpc.CallOption) error {
	return conn.Invoke(ctx, method, wireBytes(b), reply, append(opts, grpc.ForceCodecV2(rawCodec{}))...)
}

// budgetFreed waits (without sleeping) until the server's budget holds
// nothing, and fails the test if it still does after a minute.
func budgetFreed(t *testing.T, s *server) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.budget.used.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the budget still held", s.budget.used.Load())
		}
		runtime.Gosched()
	}
}

// TestGRPCEmptyInputsBomb: 30 million empty entries of inputs, 60 MB of
// protobuf that gzip makes 58 KB, would decode into gigabytes of messages.
// The server counts them from the encoding and refuses the message for
// the memory budget before decoding it, allocating little more than the
// message, and goes on serving.
func TestGRPCEmptyInputsBomb(t *testing.T) {
	srv, _, c, conn := grpcTestServer(t, Options{Repository: mnistRepo()})
	bomb := bytes.Repeat([]byte{5<<3 | 2, 0}, 30_000_000)
	var err error
	used := allocated(func() {
		err = sendRaw(ctxT(t), conn, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName, bomb, new(grpcpb.ModelInferResponse), grpc.UseCompressor(gzip.Name))
	})
	wantCode(t, err, codes.ResourceExhausted, "--max-inflight-bytes")
	if used > 512<<20 {
		t.Errorf("refusing the message allocated %d MiB", used>>20)
	}
	budgetFreed(t, srv.s)
	if _, err := c.ModelInfer(ctxT(t), mnistInput()); err != nil {
		t.Errorf("after the bomb: %v", err)
	}
}

// allocated returns the bytes the process allocates while f runs.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

func mnistInput() *grpcpb.ModelInferRequest {
	return &grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{
		Name: "input", Datatype: "FP32", Shape: []int64{1, 784}, Contents: &grpcpb.InferTensorContents{Fp32Contents: digit()}}}}
}

// TestGRPCDecompressedSize: --max-body-bytes bounds a message once
// decompressed: 4 MiB of zeros gzip to a few KB and are refused with
// ResourceExhausted; a compressed message within it is served.
func TestGRPCDecompressedSize(t *testing.T) {
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), MaxBodyBytes: 1 << 20})
	zeros := mnistInput()
	zeros.Inputs[0].Contents = nil
	zeros.RawInputContents = [][]byte{make([]byte, 4<<20)}
	_, err := c.ModelInfer(ctxT(t), zeros, grpc.UseCompressor(gzip.Name))
	wantCode(t, err, codes.ResourceExhausted, "after decompression larger than max")
	resp, err := c.ModelInfer(ctxT(t), mnistInput(), grpc.UseCompressor(gzip.Name))
	if err != nil || len(resp.GetOutputs()[0].GetContents().GetFp32Contents()) != 10 {
		t.Errorf("a compressed request: %v %v", resp, err)
	}
}

// TestGRPCUnparsableMessage: a message that is not the method's request
// answers InvalidArgument, unary or stream, not Internal.
func TestGRPCUnparsableMessage(t *testing.T) {
	_, _, _, conn := grpcTestServer(t, Options{Repository: mnistRepo()})
	ctx := ctxT(t)
	truncated := []byte{0x0a, 0x05, 'm'}      // field 1, five bytes announced, one sent
	badUTF8 := []byte{0x0a, 0x02, 0xff, 0xfe} // a string that is not UTF-8
	for _, call := range []struct {
		method string
		reply  any
	}{
		{grpcpb.GRPCInferenceService_ModelInfer_FullMethodName, new(grpcpb.ModelInferResponse)},
		{grpcpb.GRPCInferenceService_ModelMetadata_FullMethodName, new(grpcpb.ModelMetadataResponse)},
		{healthpb.Health_Check_FullMethodName, new(healthpb.HealthCheckResponse)},
	} {
		for _, b := range [][]byte{truncated, badUTF8} {
			err := sendRaw(ctx, conn, call.method, b, call.reply)
			wantCode(t, err, codes.InvalidArgument, "not a")
		}
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, healthpb.Health_Watch_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(wireBytes(truncated)); err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	wantCode(t, stream.RecvMsg(new(healthpb.HealthCheckResponse)), codes.InvalidArgument, "not a valid grpc.health.v1.HealthCheckRequest")
}

// identityServer serves an Identity model of n FP32 elements, with
// opts, and returns it with a client connection whose flow-control
// windows are the smallest (64 KiB), so that an answer the client does
// not read stays with the server.
func identityServer(t *testing.T, n int, opts Options, extra ...grpc.ServerOption) (*Server, grpcpb.GRPCInferenceServiceClient, *grpc.ClientConn, func() *grpc.ClientConn) {
	t.Helper()
	opts.Repository = repository.New(serverOptions(), repository.Source{Name: "id", Version: 1, ONNX: onnxbuild.Identity(tensor.Float32, []int{n})})
	srv, _, c, conn := grpcTestServerWith(t, opts, extra)
	dial := func() *grpc.ClientConn {
		cc, err := grpc.NewClient(conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	return srv, c, conn, dial
}

func rawIdentity(n int) *grpcpb.ModelInferRequest {
	return &grpcpb.ModelInferRequest{ModelName: "id", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{int64(n)}}},
		RawInputContents: [][]byte{make([]byte, 4*n)}}
}

// unread starts a ModelInfer call on conn whose answer it never reads,
// and returns once the server has begun sending it.
func unread(t *testing.T, ctx context.Context, conn *grpc.ClientConn, req *grpcpb.ModelInferRequest) {
	t.Helper()
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(req); err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	if _, err := stream.Header(); err != nil { // the answer's headers go with its first bytes
		t.Fatal(err)
	}
}

// dropped waits until the server has closed conn.
func dropped(t *testing.T, ctx context.Context, conn *grpc.ClientConn) {
	t.Helper()
	for conn.GetState() == connectivity.Ready {
		if !conn.WaitForStateChange(ctx, connectivity.Ready) {
			t.Fatal("the connection was not dropped")
		}
	}
}

// TestGRPCUnreadAnswersHoldTheBudget: an answer stays charged to
// --max-inflight-bytes until the transport has written it, so answers a
// client does not read fill the budget and further calls are refused as
// busy (Unavailable, retry-after), instead of memory piling up unseen;
// the bytes go back when the client's connection closes.
func TestGRPCUnreadAnswersHoldTheBudget(t *testing.T) {
	const n = 1 << 18 // 1 MiB answers
	srv, c, _, dial := identityServer(t, n, Options{MaxInflightBytes: 3<<20 + 512<<10, IOTimeout: time.Minute})
	ctx := ctxT(t)
	if _, err := c.ModelInfer(ctx, rawIdentity(n)); err != nil {
		t.Fatalf("one call alone: %v", err)
	}
	slow := dial()
	unread(t, ctx, slow, rawIdentity(n))
	if held := srv.s.budget.used.Load(); held < 4*n {
		t.Errorf("the unread answer holds %d bytes of the budget", held)
	}
	_, err := c.ModelInfer(ctx, rawIdentity(n))
	wantCode(t, err, codes.Unavailable, "busy", "--max-inflight-bytes")
	slow.Close()
	budgetFreed(t, srv.s)
	if _, err := c.ModelInfer(ctx, rawIdentity(n)); err != nil {
		t.Errorf("once the client left: %v", err)
	}
}

// TestGRPCSendDeadline: a client that does not read its answer within
// --request-timeout (the I/O deadline) is dropped, and the answer's
// bytes go back to the budget; the server serves on.
func TestGRPCSendDeadline(t *testing.T) {
	const n = 1 << 18
	srv, c, _, dial := identityServer(t, n, Options{IOTimeout: 300 * time.Millisecond})
	ctx := ctxT(t)
	slow := dial()
	unread(t, ctx, slow, rawIdentity(n))
	dropped(t, ctx, slow)
	budgetFreed(t, srv.s)
	if _, err := c.ModelInfer(ctx, rawIdentity(n)); err != nil {
		t.Errorf("after the drop: %v", err)
	}
}

// TestGRPCReceiveDeadline: a client that opens a ModelInfer call and
// does not send its message within --request-timeout is dropped, as an
// HTTP body that does not arrive is answered 408.
func TestGRPCReceiveDeadline(t *testing.T) {
	_, c, _, dial := identityServer(t, 4, Options{IOTimeout: 300 * time.Millisecond})
	ctx := ctxT(t)
	slow := dial()
	if _, err := slow.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName); err != nil {
		t.Fatal(err)
	}
	dropped(t, ctx, slow)
	if _, err := c.ModelInfer(ctx, rawIdentity(4)); err != nil {
		t.Errorf("after the drop: %v", err)
	}
}

// TestGRPCMaxStreams: a connection has at most MaxConcurrentStreams
// calls open; a client waits for one to end before it starts another.
func TestGRPCMaxStreams(t *testing.T) {
	_, _, _, dial := identityServer(t, 4, Options{IOTimeout: time.Minute}, grpc.MaxConcurrentStreams(2))
	conn := dial()
	c := grpcpb.NewGRPCInferenceServiceClient(conn)
	ctx := ctxT(t)
	if _, err := c.ModelInfer(ctx, rawIdentity(4)); err != nil { // the connection is up, its settings known
		t.Fatal(err)
	}
	open, cancel := context.WithCancel(ctx)
	for range 2 { // two calls whose messages never come
		if _, err := conn.NewStream(open, &grpc.StreamDesc{ServerStreams: true}, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName); err != nil {
			t.Fatal(err)
		}
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	_, err := c.ModelInfer(short, rawIdentity(4))
	wantCode(t, err, codes.DeadlineExceeded)
	cancel()
	if _, err := c.ModelInfer(ctx, rawIdentity(4)); err != nil {
		t.Errorf("once the two ended: %v", err)
	}
}
