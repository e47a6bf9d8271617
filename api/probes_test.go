package api

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
)

// A probe is one hostile request to a model of onnxbuild.ShapeBombs: the
// numbers its inputs are made of, the status it must get, and what the
// answer must name.
type probe struct {
	model   string
	a, b, c int64
	s       float32
	status  int
	names   []string
}

// sizeBombs are the hostile requests of a few bytes, each asking
// a value-driven model for gigabytes (or for more than 2^31 elements,
// which no tensor may hold: 400).
var sizeBombs = []probe{
	{"ConstantOfShape", 1 << 15, 1 << 15, 1, 1, 413, []string{"ConstantOfShape", "4 GiB"}},
	{"ConstantOfShape", 1 << 31, 1 << 31, 1, 1, 400, []string{"ConstantOfShape", "too many elements"}},
	{"Expand", 1 << 15, 1 << 15, 1, 2, 413, []string{"Expand", "4 GiB"}},
	{"Tile", 1 << 14, 1 << 14, 0, 3, 413, []string{"Tile", "4 GiB"}},
	{"Range", 0, 1 << 30, 1, 0, 413, []string{"Range", "GiB"}},
	{"Pad/constant", 1 << 14, 1 << 14, 1 << 14, 1, 413, []string{"Pad"}},
	{"Pad/edge", 1 << 14, 1 << 14, 1 << 14, 1, 413, []string{"Pad"}},
	{"Pad/reflect", 1 << 14, 1 << 14, 1 << 14, 1, 413, []string{"Pad"}},
	{"Resize/sizes", 1 << 15, 1 << 15, 0, 0, 413, []string{"Resize"}},
	{"Resize/scales", 1 << 14, 0, 0, 1 << 14, 413, []string{"Resize"}},
	{"Upsample", 1 << 14, 0, 0, 1 << 14, 413, []string{"Upsample"}},
	{"OneHot", 1 << 30, 0, 5, 1, 413, []string{"OneHot", "8 GiB"}},
	{"Gather", 1 << 15, 1, 0, 0, 413, []string{"Gather", "2 GiB"}},
	{"MatMul", 1 << 15, 1, 1 << 15, 1, 413, []string{"MatMul", "4 GiB"}},
	{"Add", 46340, 46340, 0, 1, 413, []string{"Add"}},
	{"Where", 46340, 46340, 0, 1, 413, []string{"Where"}},
	{"CenterCropPad", 1 << 15, 1 << 15, 0, 1, 413, []string{"CenterCropPad"}},
	{"Col2Im", 1 << 15, 1 << 15, 0, 1, 413, []string{"Col2Im"}},
	{"AffineGrid", 1 << 14, 1 << 15, 0, 1, 413, []string{"AffineGrid"}},
	{"StringSplit", 1 << 15, 1 << 15, 0, 0, 413, []string{"StringSplit"}},
	{"Loop", 1 << 20, 1 << 12, 0, 1, 413, []string{"Loop"}},
	{"DFT", 1 << 24, 16, 0, 1, 413, []string{"DFT", "GiB"}},
}

// bombName is the repository name of a model of onnxbuild.ShapeBombs.
func bombName(model string) string {
	return "bomb-" + strings.ToLower(strings.ReplaceAll(model, "/", "-"))
}

// bombRepository serves every model of onnxbuild.ShapeBombs under
// bombName, and the attention-mask model as "mask".
func bombRepository() *repository.Repository {
	bombs := onnxbuild.ShapeBombs()
	srcs := []repository.Source{{Name: "mask", Version: 1, ONNX: onnxbuild.AttentionMask().Bytes()}}
	for name, b := range bombs {
		srcs = append(srcs, repository.Source{Name: bombName(name), Version: 1, ONNX: b.Graph.Bytes()})
	}
	return repository.New(serverOptions(), srcs...)
}

// bombRequest is the JSON request of p's numbers to its model.
func bombRequest(p probe) string {
	in := onnxbuild.ShapeBombs()[p.model].Inputs(p.a, p.b, p.c, p.s)
	var inputs []any
	for _, name := range slices.Sorted(maps.Keys(in)) {
		t := in[name]
		inputs = append(inputs, map[string]any{"name": name, "datatype": t.DType.String(), "shape": append([]int{}, t.Shape...), "data": t.Data})
	}
	return mustJSON(map[string]any{"inputs": inputs})
}

// answersWell checks that the server still serves: a mask of 5 ids
// over HTTP, and over gRPC when c is not nil.
func answersWell(t *testing.T, url string, c grpcpb.GRPCInferenceServiceClient, after string) {
	t.Helper()
	if r := do(t, "POST", url+"/v2/models/mask/infer", maskBody(5)); r.status != 200 {
		t.Fatalf("after %s: a good request answers %d %s", after, r.status, r.body)
	}
	if c == nil {
		return
	}
	if _, err := c.ModelInfer(ctxT(t), maskRequest(5)); err != nil {
		t.Fatalf("after %s: a good gRPC request: %v", after, err)
	}
}

func maskRequest(n int) *grpcpb.ModelInferRequest {
	return &grpcpb.ModelInferRequest{ModelName: "mask",
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "ids", Datatype: "INT64", Shape: []int64{1, int64(n)},
			Contents: &grpcpb.InferTensorContents{Int64Contents: make([]int64, n)}}}}
}

// settled waits (without sleeping) until the process runs at most n
// goroutines, and fails the test if it still runs more after a minute.
func settled(t *testing.T, n int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the probes", runtime.NumGoroutine(), n)
		}
		runtime.Gosched()
	}
}

// TestHostileRequestProbes fires the hostile requests one after
// another at one server (64 MiB of --max-inflight-bytes): size bombs of
// a few bytes to value-driven models, the attention mask of 46,340 ids,
// a gRPC message of 30 M empty inputs gzipped to 58 KB, unparsable gRPC
// messages. Each gets a clean JSON error or gRPC status of the right
// code naming the node, and the server answers a good request after
// each; at the end it holds no bytes and its goroutines settle.
func TestHostileRequestProbes(t *testing.T) {
	srv, url, c, conn := grpcTestServerWith(t, Options{Repository: bombRepository(), MaxInflightBytes: 64 << 20,
		RequestTimeout: 20 * time.Second, Logger: quietLog()}, nil)
	answersWell(t, url, c, "start-up")
	http.DefaultClient.CloseIdleConnections()
	baseline := runtime.NumGoroutine() // the gRPC connection up, the pools started

	for _, p := range sizeBombs {
		body := bombRequest(p)
		r := do(t, "POST", url+"/v2/models/"+bombName(p.model)+"/infer", body)
		wantError(t, r, p.status, p.names...)
		if t.Failed() {
			t.Logf("%s (%d bytes): %s", p.model, len(body), body[:min(len(body), 300)])
		}
		answersWell(t, url, nil, p.model)
	}

	// The realistic case: the attention mask exported transformers build
	// from their ids; 46,340 of them ask for 8 GiB.
	wantError(t, do(t, "POST", url+"/v2/models/mask/infer", maskBody(46340)), 413, "ConstantOfShape", "8.0 GiB", "--max-inflight-bytes")
	answersWell(t, url, c, "the mask of 46,340 ids")

	// The same bombs over gRPC.
	_, err := c.ModelInfer(ctxT(t), maskRequest(46340))
	wantCode(t, err, codes.ResourceExhausted, "ConstantOfShape", "8.0 GiB")
	shape := &grpcpb.ModelInferRequest{ModelName: bombName("ConstantOfShape"),
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "shape", Datatype: "INT64", Shape: []int64{3},
			Contents: &grpcpb.InferTensorContents{Int64Contents: []int64{1 << 15, 1 << 15, 1}}}}}
	_, err = c.ModelInfer(ctxT(t), shape)
	wantCode(t, err, codes.ResourceExhausted, "ConstantOfShape", "4 GiB")
	shape.Inputs[0].Contents.Int64Contents = []int64{1 << 31, 1 << 31, 1}
	_, err = c.ModelInfer(ctxT(t), shape)
	wantCode(t, err, codes.InvalidArgument, "too many elements")
	answersWell(t, url, c, "the gRPC size bombs")

	// 30 M empty inputs: 60 MB of protobuf, 58 KB once gzipped.
	bomb := bytes.Repeat([]byte{5<<3 | 2, 0}, 30_000_000)
	err = sendRaw(ctxT(t), conn, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName, bomb, new(grpcpb.ModelInferResponse), grpc.UseCompressor(gzip.Name))
	wantCode(t, err, codes.ResourceExhausted, "--max-inflight-bytes")
	answersWell(t, url, c, "the gRPC empty-inputs bomb")

	// Messages that do not parse: INVALID_ARGUMENT, not INTERNAL.
	for _, b := range [][]byte{{0x0a, 0x05, 'm'}, {0x0a, 0x02, 0xff, 0xfe}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		err := sendRaw(ctxT(t), conn, grpcpb.GRPCInferenceService_ModelInfer_FullMethodName, b, new(grpcpb.ModelInferResponse))
		wantCode(t, err, codes.InvalidArgument)
	}
	answersWell(t, url, c, "unparsable gRPC messages")

	budgetFreed(t, srv.s)
	if held := scrape(t, url)["quantserve_inflight_bytes"]; held != 0 {
		t.Errorf("%v bytes in flight after every probe was answered", held)
	}
	settled(t, baseline)
}

// TestHostileKernelProbes: under a short --request-timeout, a run that
// does not end on its own (a Loop of 2^62 trips) answers 504 and frees
// its slot at once (with --max-inflight 1 the next request is served,
// not refused as busy), and so does a DFT of 1,048,575 points over two
// signals (an O(n²) transform once; now an FFT, which either finishes
// or stops at the deadline). gRPC gets DEADLINE_EXCEEDED.
func TestHostileKernelProbes(t *testing.T) {
	dft := onnxbuild.ShapeBombs()["DFT"]
	repo := repository.New(serverOptions(),
		repository.Source{Name: "mask", Version: 1, ONNX: onnxbuild.AttentionMask().Bytes()},
		repository.Source{Name: "endless", Version: 1, ONNX: onnxbuild.EndlessLoop().Bytes()},
		repository.Source{Name: "dft", Version: 1, ONNX: dft.Graph.Bytes()})
	srv, url, c, _ := grpcTestServerWith(t, Options{Repository: repo, MaxInflightBytes: 256 << 20, MaxInFlight: 1,
		RequestTimeout: 500 * time.Millisecond, IOTimeout: time.Minute, Logger: quietLog()}, nil)
	answersWell(t, url, c, "start-up")

	endless := inferBody("x", "FP32", []int{2, 4}, make([]float32, 8))
	wantError(t, do(t, "POST", url+"/v2/models/endless/infer", endless), 504, "--request-timeout")
	answersWell(t, url, c, "a Loop of 2^62 trips")
	_, err := c.ModelInfer(context.Background(), &grpcpb.ModelInferRequest{ModelName: "endless",
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{2, 4},
			Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 8)}}}})
	wantCode(t, err, codes.DeadlineExceeded)
	answersWell(t, url, c, "a Loop of 2^62 trips over gRPC")

	long := bombRequest(probe{model: "DFT", a: 1<<20 - 1, b: 2, s: 1})
	r := do(t, "POST", url+"/v2/models/dft/infer", long)
	if r.status != 200 {
		wantError(t, r, 504, "--request-timeout")
	}
	answersWell(t, url, c, "a DFT of 1,048,575 points")
	budgetFreed(t, srv.s)
}
