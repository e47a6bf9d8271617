package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// sample returns the value of the metric family's series with the given
// labels (a counter's or a gauge's), 0 when there is none.
func sample(t *testing.T, url, family string, labels map[string]string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f := families[family]
	if f == nil {
		return 0
	}
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestFrontEndsShareTheInferPath sends the same inferences through HTTP
// (to model "a") and gRPC (to model "b"), both the embedded MNIST model:
// successes, a request that does not decode, one that fails its checks,
// one the model refuses, and one for an unknown version. Both front ends
// answer with the same codes, and record the same statistics, the same
// inference counts in /metrics and the same model labels in their request
// log lines; they give back every work slot and every byte of the memory
// budget.
func TestFrontEndsShareTheInferPath(t *testing.T) {
	var logs syncBuffer
	repo := repository.New(serverOptions(),
		repository.Source{Name: "a", Version: 1, ONNX: defaultmodel.ONNX},
		repository.Source{Name: "b", Version: 1, ONNX: defaultmodel.ONNX})
	_, url, c, _ := grpcTestServer(t, Options{Repository: repo, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := ctxT(t)
	x := digit()
	type input struct {
		name, dtype string
		shape       []int
		data        []float32
	}
	good := input{"input", "FP32", []int{1, 784}, x}
	cases := []struct {
		name    string
		version string
		inputs  []input
		outputs []string
		http    int
		grpc    codes.Code
		want    string
	}{
		{name: "success", inputs: []input{good}, http: 200, grpc: codes.OK},
		{name: "decode", inputs: []input{{"input", "FP33", []int{1}, []float32{1}}}, http: 400, grpc: codes.InvalidArgument, want: "FP33"},
		{name: "check", inputs: []input{good, good}, http: 400, grpc: codes.InvalidArgument, want: "more than once"},
		{name: "model refuses", inputs: []input{{"input", "FP32", []int{1, 3}, x[:3]}}, http: 400, grpc: codes.InvalidArgument, want: "input"},
		{name: "unknown version", version: "9", inputs: []input{good}, http: 404, grpc: codes.NotFound, want: "9"},
		{name: "named output", inputs: []input{good}, outputs: []string{"scores"}, http: 200, grpc: codes.OK},
	}
	for _, tc := range cases {
		var ins []any
		msg := &grpcpb.ModelInferRequest{ModelName: "b", ModelVersion: tc.version}
		for _, in := range tc.inputs {
			ins = append(ins, map[string]any{"name": in.name, "datatype": in.dtype, "shape": in.shape, "data": in.data})
			shape := make([]int64, len(in.shape))
			for i, d := range in.shape {
				shape[i] = int64(d)
			}
			msg.Inputs = append(msg.Inputs, &grpcpb.ModelInferRequest_InferInputTensor{Name: in.name, Datatype: in.dtype, Shape: shape,
				Contents: &grpcpb.InferTensorContents{Fp32Contents: in.data}})
		}
		body := map[string]any{"inputs": ins}
		var outs []any
		for _, o := range tc.outputs {
			outs = append(outs, map[string]any{"name": o})
			msg.Outputs = append(msg.Outputs, &grpcpb.ModelInferRequest_InferRequestedOutputTensor{Name: o})
		}
		if outs != nil {
			body["outputs"] = outs
		}
		path := url + "/v2/models/a/infer"
		if tc.version != "" {
			path = url + "/v2/models/a/versions/" + tc.version + "/infer"
		}
		r := do(t, "POST", path, mustJSON(body))
		if tc.http == 200 {
			if r.status != 200 {
				t.Errorf("%s over HTTP: %d %s", tc.name, r.status, r.body)
			}
		} else {
			wantError(t, r, tc.http, tc.want)
		}
		resp, err := c.ModelInfer(ctx, msg)
		if tc.grpc == codes.OK {
			if err != nil || len(resp.Outputs) != 1 || resp.ModelName != "b" || resp.ModelVersion != "1" {
				t.Errorf("%s over gRPC: %v %v", tc.name, resp, err)
			}
		} else {
			wantCode(t, err, tc.grpc, tc.want)
		}
	}
	// The model is looked up before the request is decoded, on both.
	wantError(t, do(t, "POST", url+"/v2/models/nope/infer", "{"), 404, "nope")
	_, err := c.ModelInfer(ctx, &grpcpb.ModelInferRequest{ModelName: "nope", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP33"}}})
	wantCode(t, err, codes.NotFound, "nope")

	const successes, failures = 2, 3
	for _, model := range []string{"a", "b"} {
		var stats statsAnswer
		if r := do(t, "GET", url+"/v2/models/"+model+"/stats", ""); r.status != 200 || json.Unmarshal(r.body, &stats) != nil || len(stats.ModelStats) != 1 {
			t.Fatalf("stats of %s: %d %s", model, r.status, r.body)
		}
		st := stats.ModelStats[0]
		is := st.InferenceStats
		for what, n := range map[string]int64{"inference_count": st.InferenceCount, "execution_count": st.ExecutionCount,
			"success": is.Success.Count, "queue": is.Queue.Count, "compute_input": is.ComputeInput.Count,
			"compute_infer": is.ComputeInfer.Count, "compute_output": is.ComputeOutput.Count} {
			if n != successes {
				t.Errorf("model %s: %s counts %d, want %d", model, what, n, successes)
			}
		}
		if is.Fail.Count != failures {
			t.Errorf("model %s: %d failures, want %d", model, is.Fail.Count, failures)
		}
		if is.Success.NS < is.ComputeInfer.NS || st.LastInference == 0 {
			t.Errorf("model %s: times %+v", model, st)
		}
		for outcome, want := range map[string]float64{"ok": successes, "error": failures} {
			if v := sample(t, url, "quantserve_inferences_total", map[string]string{"model": model, "version": "1", "outcome": outcome}); v != want {
				t.Errorf("model %s: quantserve_inferences_total{outcome=%q} = %v, want %v", model, outcome, v, want)
			}
		}
	}
	m := scrape(t, url)
	if m["quantserve_inflight"] != 0 || m["quantserve_inflight_bytes"] != 0 {
		t.Errorf("after every request: %v slots and %v bytes still held", m["quantserve_inflight"], m["quantserve_inflight_bytes"])
	}
	// Every inference that found its version labels its request's log
	// line with it (the HTTP requests name no version in their path).
	got := logs.String()
	for _, model := range []string{"a", "b"} {
		if n := strings.Count(got, "model="+model+" version=1 "); n != successes+failures {
			t.Errorf("%d log lines name model %s version 1, want %d:\n%s", n, model, successes+failures, got)
		}
	}
}

// TestHTTPEncodeFailureCounts: an answer that cannot be encoded (an
// output's binary_data is not a boolean) is a 400, counted as a failed
// inference, after the model ran.
func TestHTTPEncodeFailureCounts(t *testing.T) {
	url := embeddedServer(t)
	body := mustJSON(map[string]any{
		"inputs":  []any{map[string]any{"name": "input", "datatype": "FP32", "shape": []int{1, 784}, "data": make([]float32, 784)}},
		"outputs": []any{map[string]any{"name": "scores", "parameters": map[string]any{"binary_data": "yes"}}}})
	wantError(t, do(t, "POST", url+"/v2/models/mnist/infer", body), 400, "parameters.binary_data must be true or false")
	var stats statsAnswer
	if r := do(t, "GET", url+"/v2/models/mnist/stats", ""); json.Unmarshal(r.body, &stats) != nil || len(stats.ModelStats) != 1 {
		t.Fatalf("stats: %d %s", r.status, r.body)
	}
	if is := stats.ModelStats[0].InferenceStats; is.Fail.Count != 1 || is.Success.Count != 0 {
		t.Errorf("after an answer that could not be encoded: %+v", is)
	}
	if v := sample(t, url, "quantserve_inferences_total", map[string]string{"model": "mnist", "outcome": "error"}); v != 1 {
		t.Errorf("quantserve_inferences_total{outcome=\"error\"} = %v, want 1", v)
	}
}

// TestWorkHandsItsHandlerTheBody: the work middleware hands its handler
// the body it received (here larger than its first buffer, so grown as it
// arrived) and when it was in, as arguments. The body's bytes hold the
// memory budget until the handler settles them into decoded tensors; the
// rest goes back once the answer is out.
func TestWorkHandsItsHandlerTheBody(t *testing.T) {
	s := newServer(Options{Logger: quietLog()})
	type seen struct {
		body                  string
		received, start       time.Time
		held, settled, budget int64
		after                 []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(s.work(func(w http.ResponseWriter, r *http.Request, in *workInput) error {
		sn := seen{body: string(in.body), received: in.received, start: time.Now(), held: in.bodyHeld, budget: s.budget.used.Load()}
		if err := in.settle(tensor.From([]int{2}, []float32{1, 2})); err != nil {
			return err
		}
		sn.settled, sn.after = s.budget.used.Load(), in.body
		got <- sn
		writeJSON(w, 200, map[string]int{"len": len(sn.body)})
		return nil
	}))
	t.Cleanup(srv.Close)
	body := strings.Repeat("x", 3*firstChunk+5)
	if r := do(t, "POST", srv.URL, body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sn := <-got
	if sn.body != body {
		t.Errorf("the handler got %d bytes of a %d-byte body", len(sn.body), len(body))
	}
	if sn.received.IsZero() || sn.received.After(sn.start) {
		t.Errorf("received at %v, the handler started at %v", sn.received, sn.start)
	}
	if sn.held < int64(len(body)) || sn.budget != sn.held {
		t.Errorf("the body holds %d bytes of the budget (%d in use) for %d bytes", sn.held, sn.budget, len(body))
	}
	if sn.settled != 8 || sn.after != nil {
		t.Errorf("settled into 8 bytes of tensors: %d held, body %q", sn.settled, sn.after)
	}
	// The small answer stays in net/http's buffer until the handler, and
	// the work middleware around it, return.
	if n := s.budget.used.Load(); n != 0 {
		t.Errorf("%d bytes still held after the answer", n)
	}
}
