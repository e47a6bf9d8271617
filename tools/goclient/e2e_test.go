// Package goclient_test drives a live quantserve with the Go clients that
// oapi-codegen generates, with its default settings, from quantserve's own
// openapi.yaml (package quantserve) and from the official Open Inference
// Protocol description (package oip).
//
// The server is started by the caller (tools/clients, which .ci/run runs):
// QUANTSERVE_URL is its base URL, serving the repository that
// `go run ./internal/cmd/testrepo` writes, with the admin token in
// QUANTSERVE_ADMIN_TOKEN. Without QUANTSERVE_URL the tests skip, except
// under CI=true, where they fail.
package goclient_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/tools/goclient/oip"
	qs "github.com/quantserve/quantserve/tools/goclient/quantserve"
)

func serverURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("QUANTSERVE_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("QUANTSERVE_URL is not set: run tools/clients, which starts the server")
		}
		t.Skip("QUANTSERVE_URL is not set: run tools/clients, which starts a server and runs these tests")
	}
	return url
}

func client(t *testing.T) *qs.ClientWithResponses {
	t.Helper()
	c, err := qs.NewClientWithResponses(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// must returns v, or panics on err: a request that could not be made or
// whose answer could not be read.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestHealthAndMetadata(t *testing.T) {
	c, ctx := client(t), context.Background()
	if r := must(c.ServerLiveWithResponse(ctx)); r.JSON200 == nil || !r.JSON200.Live {
		t.Errorf("live: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.ServerLiveHeadWithResponse(ctx)); r.StatusCode() != 200 || len(r.Body) != 0 {
		t.Errorf("HEAD live: %d %q", r.StatusCode(), r.Body)
	}
	if r := must(c.ServerReadyWithResponse(ctx)); r.JSON200 == nil || !r.JSON200.Ready {
		t.Errorf("ready: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.ServerReadyHeadWithResponse(ctx)); r.StatusCode() != 200 {
		t.Errorf("HEAD ready: %d", r.StatusCode())
	}
	md := must(c.ServerMetadataWithResponse(ctx))
	if md.JSON200 == nil || md.JSON200.Name != "quantserve" || !slices.Contains(md.JSON200.Extensions, "statistics") || !slices.Contains(md.JSON200.Extensions, "model_configuration") {
		t.Errorf("server metadata: %d %s", md.StatusCode(), md.Body)
	}
	mm := must(c.ModelMetadataWithResponse(ctx, "mnist"))
	if mm.JSON200 == nil {
		t.Fatalf("model metadata: %d %s", mm.StatusCode(), mm.Body)
	}
	m := mm.JSON200
	if m.Name != "mnist" || len(m.Inputs) != 1 || m.Inputs[0].Name != "input" || m.Inputs[0].Datatype != qs.FP32 || !slices.Equal(m.Inputs[0].Shape, []int64{-1, 784}) || m.Parameters == nil {
		t.Fatalf("model metadata: %s", mm.Body)
	}
	params := *m.Parameters
	if k, err := params["kernels"].AsParameterValue0(); err != nil || k == "" {
		t.Errorf("parameters.kernels: %q %v", k, err)
	}
	if n, err := params["layers"].AsParameterValue1(); err != nil || n != 3 {
		t.Errorf("parameters.layers: %v %v", n, err)
	}
	if r := must(c.ModelVersionReadyWithResponse(ctx, "mnist", "1")); r.JSON200 == nil || !r.JSON200.Ready || r.JSON200.Name != "mnist" {
		t.Errorf("model ready: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.OpenapiDocumentWithResponse(ctx)); r.YAML200 == nil || (*r.YAML200)["openapi"] != "3.0.3" {
		t.Errorf("/openapi.yaml: %d", r.StatusCode())
	}
}

func infer(t *testing.T, c *qs.ClientWithResponses, model string, in qs.InputTensor) *qs.ModelInferResponse {
	t.Helper()
	return must(c.ModelInferWithResponse(context.Background(), model, qs.InferenceRequest{Inputs: []qs.InputTensor{in}}))
}

// TestExactRoundTrips sends values through identity models and demands
// them back bit for bit: FP32 (each value a float32, sent as the double it
// is exactly), FP64 and INT64 (past 2^24 and 2^53, where float32 and
// float64 clients would round).
func TestExactRoundTrips(t *testing.T) {
	c := client(t)

	f32 := []float32{0.1, 1.0 / 3, -2.5e-30, math.MaxFloat32, math.SmallestNonzeroFloat32, 16777217}
	var d qs.TensorData
	sent := make([]float64, len(f32))
	for i, v := range f32 {
		sent[i] = float64(v)
	}
	if err := d.FromTensorDataDouble(sent); err != nil {
		t.Fatal(err)
	}
	r := infer(t, c, "identity_fp32", qs.InputTensor{Name: "x", Datatype: qs.FP32, Shape: []int64{int64(len(f32))}, Data: d})
	if r.JSON200 == nil || len(r.JSON200.Outputs) != 1 {
		t.Fatalf("FP32: %d %s", r.StatusCode(), r.Body)
	}
	got := must(r.JSON200.Outputs[0].Data.AsTensorDataDouble())
	for i, v := range f32 {
		if i >= len(got) || math.Float32bits(float32(got[i])) != math.Float32bits(v) {
			t.Errorf("FP32 %d: sent %v, got %v", i, v, got)
		}
	}

	f64 := []float64{0.1, 1e300, 5e-324, -1.0 / 3, math.MaxFloat64}
	if err := d.FromTensorDataDouble(f64); err != nil {
		t.Fatal(err)
	}
	r = infer(t, c, "identity_fp64", qs.InputTensor{Name: "x", Datatype: qs.FP64, Shape: []int64{int64(len(f64))}, Data: d})
	if r.JSON200 == nil {
		t.Fatalf("FP64: %d %s", r.StatusCode(), r.Body)
	}
	if got := must(r.JSON200.Outputs[0].Data.AsTensorDataDouble()); !slices.Equal(got, f64) {
		t.Errorf("FP64: sent %v, got %v", f64, got)
	}

	i64 := []int64{16777217, 9007199254740993, math.MinInt64, math.MaxInt64}
	if err := d.FromTensorDataInt64(i64); err != nil {
		t.Fatal(err)
	}
	r = infer(t, c, "identity_int64", qs.InputTensor{Name: "x", Datatype: qs.INT64, Shape: []int64{2, 2}, Data: d})
	if r.JSON200 == nil {
		t.Fatalf("INT64: %d %s", r.StatusCode(), r.Body)
	}
	out := r.JSON200.Outputs[0]
	if got := must(out.Data.AsTensorDataInt64()); !slices.Equal(got, i64) || out.Datatype != qs.INT64 || !slices.Equal(out.Shape, []int64{2, 2}) {
		t.Errorf("INT64: sent %v, got %s", i64, r.Body)
	}
}

// TestMNIST classifies the README's digit through the generated client.
func TestMNIST(t *testing.T) {
	c := client(t)
	body := must(os.ReadFile("../../examples/mnist-digit.json"))
	var req qs.InferenceRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	r := must(c.ModelVersionInferWithResponse(context.Background(), "mnist", "1", req))
	if r.JSON200 == nil || r.JSON200.Id == nil || *r.JSON200.Id != "digit-7" {
		t.Fatalf("infer: %d %s", r.StatusCode(), r.Body)
	}
	scores := must(r.JSON200.Outputs[0].Data.AsTensorDataDouble())
	if len(scores) != 10 || slices.Index(scores, slices.Max(scores)) != 7 {
		t.Errorf("scores %v: the digit is a 7", scores)
	}
}

func TestErrors(t *testing.T) {
	c, ctx := client(t), context.Background()
	var d qs.TensorData
	if err := d.FromTensorDataDouble([]float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	r := infer(t, c, "nope", qs.InputTensor{Name: "x", Datatype: qs.FP32, Shape: []int64{3}, Data: d})
	if r.JSON404 == nil || !strings.Contains(r.JSON404.Error, "nope") {
		t.Errorf("unknown model: %d %s", r.StatusCode(), r.Body)
	}
	r = infer(t, c, "identity_fp32", qs.InputTensor{Name: "x", Datatype: qs.FP32, Shape: []int64{4}, Data: d})
	if r.JSON400 == nil || r.JSON400.Error == "" {
		t.Errorf("shape and data disagree: %d %s", r.StatusCode(), r.Body)
	}
	if err := d.FromTensorDataInt64(make([]int64, 10)); err != nil {
		t.Fatal(err)
	}
	r = infer(t, c, "identity_int64", qs.InputTensor{Name: "x", Datatype: qs.INT64, Shape: []int64{5, 2}, Data: d})
	if r.JSON400 == nil || !strings.Contains(r.JSON400.Error, "max_batch_size") {
		t.Errorf("batch over config.pbtxt's max_batch_size: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.ModelVersionMetadataWithResponse(ctx, "mnist", "9")); r.JSON404 == nil {
		t.Errorf("unknown version: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.RepositoryUnloadWithResponse(ctx, "mnist")); r.JSON401 == nil {
		t.Errorf("unload without the token: %d %s", r.StatusCode(), r.Body)
	}
}

func TestStatisticsAndConfig(t *testing.T) {
	c, ctx := client(t), context.Background()
	var d qs.TensorData
	if err := d.FromTensorDataInt64([]int64{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	before := must(c.ModelVersionStatsWithResponse(ctx, "identity_int64", "1"))
	if before.JSON200 == nil || len(before.JSON200.ModelStats) != 1 {
		t.Fatalf("stats: %d %s", before.StatusCode(), before.Body)
	}
	if r := infer(t, c, "identity_int64", qs.InputTensor{Name: "x", Datatype: qs.INT64, Shape: []int64{3, 2}, Data: d}); r.JSON200 == nil {
		t.Fatalf("infer: %d %s", r.StatusCode(), r.Body)
	}
	after := must(c.ModelStatsWithResponse(ctx, "identity_int64"))
	if after.JSON200 == nil || len(after.JSON200.ModelStats) != 1 {
		t.Fatalf("stats: %d %s", after.StatusCode(), after.Body)
	}
	b, a := before.JSON200.ModelStats[0], after.JSON200.ModelStats[0]
	if a.InferenceCount-b.InferenceCount != 3 || a.ExecutionCount-b.ExecutionCount != 1 || a.InferenceStats.Success.Count-b.InferenceStats.Success.Count != 1 || a.LastInference == 0 {
		t.Errorf("a batch of 3: stats before %+v, after %+v", b, a)
	}
	all := must(c.AllModelStatsWithResponse(ctx))
	if all.JSON200 == nil || len(all.JSON200.ModelStats) < 4 {
		t.Errorf("all stats: %d %s", all.StatusCode(), all.Body)
	}
	cfg := must(c.ModelConfigWithResponse(ctx, "identity_int64"))
	if cfg.JSON200 == nil {
		t.Fatalf("config: %d %s", cfg.StatusCode(), cfg.Body)
	}
	conf := cfg.JSON200
	if conf.MaxBatchSize != 4 || len(conf.Input) != 1 || conf.Input[0].DataType != "TYPE_INT64" || !slices.Equal(conf.Input[0].Dims, []int64{2}) ||
		conf.VersionPolicy.Latest == nil || conf.VersionPolicy.Latest.NumVersions != 1 || conf.ConfigFile == nil || *conf.ConfigFile != "config.pbtxt" {
		t.Errorf("config: %s", cfg.Body)
	}
	mcfg := must(c.ModelVersionConfigWithResponse(ctx, "mnist", "1"))
	if mcfg.JSON200 == nil || len(mcfg.JSON200.Quantization) != 3 || mcfg.JSON200.Quantization[0].Kernels != "int8 per_channel" || mcfg.JSON200.Quantization[0].K != 784 {
		t.Errorf("mnist config: %d %s", mcfg.StatusCode(), mcfg.Body)
	}
}

func TestRepository(t *testing.T) {
	c, ctx := client(t), context.Background()
	token := os.Getenv("QUANTSERVE_ADMIN_TOKEN")
	auth := func(ctx context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	state := func(name string) qs.RepositoryIndexEntryState {
		t.Helper()
		r := must(c.RepositoryIndexWithResponse(ctx))
		if r.JSON200 == nil {
			t.Fatalf("index: %d %s", r.StatusCode(), r.Body)
		}
		for _, e := range *r.JSON200 {
			if e.Name == name {
				return e.State
			}
		}
		return ""
	}
	if s := state("identity_fp64"); s != qs.READY {
		t.Fatalf("identity_fp64 is %q", s)
	}
	if r := must(c.RepositoryUnloadWithResponse(ctx, "identity_fp64", auth)); r.StatusCode() != 200 {
		t.Fatalf("unload: %d %s", r.StatusCode(), r.Body)
	}
	if s := state("identity_fp64"); s != qs.UNAVAILABLE {
		t.Errorf("after unload identity_fp64 is %q", s)
	}
	if r := must(c.ModelReadyWithResponse(ctx, "identity_fp64")); r.JSON404 == nil {
		t.Errorf("unloaded model ready: %d %s", r.StatusCode(), r.Body)
	}
	if r := must(c.RepositoryLoadWithResponse(ctx, "identity_fp64", qs.RepositoryLoadJSONRequestBody{}, auth)); r.StatusCode() != 200 {
		t.Fatalf("load: %d %s", r.StatusCode(), r.Body)
	}
	// Triton's load-time config override, refused when it would change
	// answers (sequence batching), with the field named.
	bad := `{"sequence_batching": {}}`
	body := qs.RepositoryLoadJSONRequestBody{}
	body.Parameters = &struct {
		Config *string `json:"config,omitempty"`
	}{Config: &bad}
	if r := must(c.RepositoryLoadWithResponse(ctx, "identity_fp64", body, auth)); r.JSON400 == nil || !strings.Contains(string(r.Body), "sequence_batching") {
		t.Errorf("load with a sequence_batching override: %d %s", r.StatusCode(), r.Body)
	}
	if s := state("identity_fp64"); s != qs.READY {
		t.Errorf("after load identity_fp64 is %q", s)
	}
	if r := must(c.RepositoryLoadWithResponse(ctx, "nope", qs.RepositoryLoadJSONRequestBody{}, auth)); r.JSON404 == nil {
		t.Errorf("load of a model not on disk: %d %s", r.StatusCode(), r.Body)
	}
}

// TestOfficialOIPClient drives the server with the client generated from
// the protocol's own description: quantserve speaks the protocol as it is
// written. (That description has no format on its numbers, so its client
// holds tensor data as float32: the values here are ones float32 holds.)
func TestOfficialOIPClient(t *testing.T) {
	c, err := oip.NewClientWithResponses(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r := must(c.GetV2HealthLiveWithResponse(ctx)); r.StatusCode() != 200 {
		t.Errorf("live: %d", r.StatusCode())
	}
	if r := must(c.GetV2HealthReadyWithResponse(ctx)); r.StatusCode() != 200 {
		t.Errorf("ready: %d", r.StatusCode())
	}
	if r := must(c.GetV2WithResponse(ctx)); r.JSON200 == nil || r.JSON200.Name != "quantserve" || len(r.JSON200.Extensions) == 0 {
		t.Errorf("server metadata (GET /v2/): %d %s", r.StatusCode(), r.Body)
	}
	md := must(c.GetV2ModelsModelNameVersionsModelVersionWithResponse(ctx, "mnist", "1"))
	if md.JSON200 == nil || md.JSON200.Platform != "onnx_onnxv1" || md.JSON200.Inputs == nil || (*md.JSON200.Inputs)[0].Name != "input" || !slices.Equal((*md.JSON200.Inputs)[0].Shape, []int{-1, 784}) {
		t.Errorf("model metadata: %d %s", md.StatusCode(), md.Body)
	}
	if r := must(c.GetV2ModelsModelNameVersionsModelVersionReadyWithResponse(ctx, "mnist", "1")); r.StatusCode() != 200 {
		t.Errorf("model ready: %d %s", r.StatusCode(), r.Body)
	}

	// the README's digit, through the official request types
	var digit struct {
		Inputs []struct {
			Name     string
			Shape    []int
			Datatype string
			Data     []float32
		}
	}
	if err := json.Unmarshal(must(os.ReadFile("../../examples/mnist-digit.json")), &digit); err != nil {
		t.Fatal(err)
	}
	in := digit.Inputs[0]
	items := make(oip.TensorData, len(in.Data))
	for i, v := range in.Data {
		if err := items[i].FromTensorData1(v); err != nil {
			t.Fatal(err)
		}
	}
	id := "official"
	r := must(c.PostV2ModelsMODELNAMEVersionsMODELVERSIONInferWithResponse(ctx, "mnist", "1", oip.InferenceRequest{
		Id:     &id,
		Inputs: []oip.RequestInput{{Name: in.Name, Shape: in.Shape, Datatype: in.Datatype, Data: items}},
	}))
	if r.JSON200 == nil || r.JSON200.ModelName != "mnist" || r.JSON200.Id == nil || *r.JSON200.Id != id || len(r.JSON200.Outputs) != 1 {
		t.Fatalf("infer: %d %s", r.StatusCode(), r.Body)
	}
	out := r.JSON200.Outputs[0]
	scores := make([]float32, len(out.Data))
	for i, item := range out.Data {
		scores[i] = must(item.AsTensorData1())
	}
	if out.Datatype != "FP32" || !slices.Equal(out.Shape, []int{1, 10}) || slices.Index(scores, slices.Max(scores)) != 7 {
		t.Errorf("infer: %s", r.Body)
	}

	// INT64 and FP32 values float32 holds exactly come back exactly
	for _, c2 := range []struct {
		model, dtype string
		shape        []int
		values       []float32
	}{
		{"identity_int64", "INT64", []int{2, 2}, []float32{16777216, -3, 0, 1 << 30}},
		{"identity_fp32", "FP32", []int{3}, []float32{0.1, -1.0 / 3, math.MaxFloat32}},
	} {
		items := make(oip.TensorData, len(c2.values))
		for i, v := range c2.values {
			if err := items[i].FromTensorData1(v); err != nil {
				t.Fatal(err)
			}
		}
		r := must(c.PostV2ModelsMODELNAMEVersionsMODELVERSIONInferWithResponse(ctx, c2.model, "1", oip.InferenceRequest{
			Inputs: []oip.RequestInput{{Name: "x", Shape: c2.shape, Datatype: c2.dtype, Data: items}},
		}))
		if r.JSON200 == nil {
			t.Fatalf("%s: %d %s", c2.model, r.StatusCode(), r.Body)
		}
		for i, item := range r.JSON200.Outputs[0].Data {
			if v := must(item.AsTensorData1()); v != c2.values[i] {
				t.Errorf("%s %d: sent %v, got %v", c2.model, i, c2.values[i], v)
			}
		}
	}

	// errors are {"error": "..."} as the description says
	bad := must(c.PostV2ModelsMODELNAMEVersionsMODELVERSIONInferWithResponse(ctx, "mnist", "1", oip.InferenceRequest{
		Inputs: []oip.RequestInput{{Name: "input", Shape: []int{1, 3}, Datatype: "FP32", Data: items[:0]}},
	}))
	if bad.JSON400 == nil || bad.JSON400.Error == nil || *bad.JSON400.Error == "" {
		t.Errorf("bad request: %d %s", bad.StatusCode(), bad.Body)
	}
}
