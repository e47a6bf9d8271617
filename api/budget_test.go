package api

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
)

// maskServer serves the attention-mask model (internal/onnxbuild) as
// "mask" under opts, over HTTP and gRPC.
func maskServer(t *testing.T, opts Options) (string, grpcpb.GRPCInferenceServiceClient) {
	t.Helper()
	opts.Repository = repository.New(serverOptions(), repository.Source{Name: "mask", Version: 1, ONNX: onnxbuild.AttentionMask().Bytes()})
	_, url, c, _ := grpcTestServerWith(t, opts, nil)
	return url, c
}

func maskBody(n int) string {
	return inferBody("ids", "INT64", []int{1, n}, make([]int64, n))
}

// TestValuesAreCharged: the attention mask built from 46,340 ids is 8 GiB.
// With a 64 MiB budget the 92 KB request gets 413 naming the node and
// the size, before anything is allocated, over HTTP and gRPC alike; the
// server keeps answering, and gives back every byte it charged.
func TestValuesAreCharged(t *testing.T) {
	url, c := maskServer(t, Options{MaxInflightBytes: 64 << 20, Logger: quietLog()})
	const n = 46340
	r := do(t, "POST", url+"/v2/models/mask/infer", maskBody(n))
	wantError(t, r, 413, "ConstantOfShape", "8.0 GiB", "--max-inflight-bytes")

	_, err := c.ModelInfer(context.Background(), &grpcpb.ModelInferRequest{ModelName: "mask",
		Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "ids", Datatype: "INT64", Shape: []int64{1, n},
			Contents: &grpcpb.InferTensorContents{Int64Contents: make([]int64, n)}}}})
	if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "ConstantOfShape") {
		t.Errorf("gRPC: %v, want RESOURCE_EXHAUSTED naming the node", err)
	}

	r = do(t, "POST", url+"/v2/models/mask/infer", maskBody(64))
	if r.status != 200 {
		t.Fatalf("a short request: %d %s", r.status, r.body)
	}
	if held := scrape(t, url)["quantserve_inflight_bytes"]; held != 0 {
		t.Errorf("%v bytes held after every request finished", held)
	}
}

// TestRequestCapAndBusyBudget: --max-request-bytes bounds one request
// (413 naming the flag); a request that would fit alone but not beside
// what others hold gets 503 with Retry-After.
func TestRequestCapAndBusyBudget(t *testing.T) {
	url, _ := maskServer(t, Options{MaxInflightBytes: 64 << 20, MaxRequestBytes: 8 << 20, Logger: quietLog()})
	// 2048² floats: 16 MiB, past the 8 MiB a request may hold.
	wantError(t, do(t, "POST", url+"/v2/models/mask/infer", maskBody(2048)), 413, "ConstantOfShape", "16 MiB", "--max-request-bytes")
	// 512² floats: 1 MiB, and its answer, at most 3.75 MiB: it fits.
	if r := do(t, "POST", url+"/v2/models/mask/infer", maskBody(512)); r.status != 200 {
		t.Fatalf("a request within the cap: %d %s", r.status, r.body)
	}

	url, _ = maskServer(t, Options{MaxInflightBytes: 64 << 20, Logger: quietLog()})
	// A body announced at 60 MiB holds all of it once past its first MiB.
	held := trickle(t, url, "/v2/models/mask/infer", 60<<20, `{"inputs":`+bytesOf(reserveAfter+1))
	defer held.Close()
	waitMetric(t, url, func(m metrics) bool { return m["quantserve_inflight_bytes"] >= 60<<20 })
	r := do(t, "POST", url+"/v2/models/mask/infer", maskBody(1024))
	wantError(t, r, 503, "ConstantOfShape", "--max-inflight-bytes")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

// TestAnswerIsCharged: the encoded answer counts too. A mask of 1,500²
// floats (9 MiB) fits a 40 MiB budget, but its JSON (up to 15 bytes an
// element, 32 MiB) beside it does not: 413; asked in binary it is 200.
func TestAnswerIsCharged(t *testing.T) {
	url, _ := maskServer(t, Options{MaxInflightBytes: 40 << 20, Logger: quietLog()})
	const n = 1500
	wantError(t, do(t, "POST", url+"/v2/models/mask/infer", maskBody(n)), 413, "encoding the answer", "--max-inflight-bytes")
	body := strings.Replace(maskBody(n), `{"inputs"`, `{"parameters":{"binary_data_output":true},"inputs"`, 1)
	r := do(t, "POST", url+"/v2/models/mask/infer", body)
	if r.status != 200 || len(r.body) < 4*n*n {
		t.Errorf("in binary: %d, %d bytes", r.status, len(r.body))
	}
	if held := scrape(t, url)["quantserve_inflight_bytes"]; held != 0 {
		t.Errorf("%v bytes held after every request finished", held)
	}
}
