package api

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/defaultmodel"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/tensor"
)

// The tests of Triton's RPCs drive the server through the client
// generated from Triton's grpc_service.proto (grpcpb).

func TestGRPCModelConfig(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{
		"batched": {1: onnxbuild.Identity(tensor.Float32, []int{-1, 3}), 2: onnxbuild.Identity(tensor.Float32, []int{-1, 3})},
		"plain":   {1: onnxbuild.Identity(tensor.Int64, []int{2})},
	}, map[string]string{"batched": `
max_batch_size: 8
version_policy:
  latest: {num_versions: 1}
dynamic_batching:
  max_queue_delay_microseconds: 100
  preferred_batch_size: [4]
  max_queue_size: 16
instance_group:
  - {kind: KIND_CPU, count: 2}
  - {name: spare, kind: KIND_AUTO}
parameters:
  owner: vision
`})
	_, _, c, _ := grpcTestServer(t, Options{Repository: openRepo(t, dir)})
	ctx := ctxT(t)

	got, err := c.ModelConfig(ctx, &grpcpb.ModelConfigRequest{Name: "batched"})
	if err != nil {
		t.Fatal(err)
	}
	tensorIO := func(dt grpcpb.DataType, dims ...int64) ([]*grpcpb.ModelInput, []*grpcpb.ModelOutput) {
		return []*grpcpb.ModelInput{{Name: "x", DataType: dt, Dims: dims}}, []*grpcpb.ModelOutput{{Name: "y", DataType: dt, Dims: dims}}
	}
	in, out := tensorIO(grpcpb.DataType_TYPE_FP32, 3)
	want := &grpcpb.ModelConfig{
		Name: "batched", Platform: "onnxruntime_onnx", Backend: "onnxruntime", MaxBatchSize: 8,
		VersionPolicy: &grpcpb.ModelVersionPolicy{PolicyChoice: &grpcpb.ModelVersionPolicy_Latest_{Latest: &grpcpb.ModelVersionPolicy_Latest{NumVersions: 1}}},
		Input:         in, Output: out,
		SchedulingChoice: &grpcpb.ModelConfig_DynamicBatching{DynamicBatching: &grpcpb.ModelDynamicBatching{
			PreferredBatchSize: []int32{4}, MaxQueueDelayMicroseconds: 100, DefaultQueuePolicy: &grpcpb.ModelQueuePolicy{MaxQueueSize: 16}}},
		InstanceGroup: []*grpcpb.ModelInstanceGroup{
			{Name: "batched_0", Kind: grpcpb.ModelInstanceGroup_KIND_CPU, Count: 2},
			{Name: "spare", Kind: grpcpb.ModelInstanceGroup_KIND_CPU, Count: 1},
		},
		DefaultModelFilename: "model.onnx",
		Parameters:           map[string]*grpcpb.ModelParameter{"owner": {StringValue: "vision"}},
	}
	if !proto.Equal(got.GetConfig(), want) {
		t.Errorf("ModelConfig batched:\n got %v\nwant %v", got.GetConfig(), want)
	}

	got, err = c.ModelConfig(ctx, &grpcpb.ModelConfigRequest{Name: "plain", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	in, out = tensorIO(grpcpb.DataType_TYPE_INT64, 2)
	want = &grpcpb.ModelConfig{
		Name: "plain", Platform: "onnxruntime_onnx", Backend: "onnxruntime",
		VersionPolicy: &grpcpb.ModelVersionPolicy{PolicyChoice: &grpcpb.ModelVersionPolicy_All_{All: &grpcpb.ModelVersionPolicy_All{}}},
		Input:         in, Output: out, DefaultModelFilename: "model.onnx",
	}
	if !proto.Equal(got.GetConfig(), want) {
		t.Errorf("ModelConfig plain:\n got %v\nwant %v", got.GetConfig(), want)
	}

	_, err = c.ModelConfig(ctx, &grpcpb.ModelConfigRequest{Name: "batched", Version: "1"}) // not loaded: latest 1
	wantCode(t, err, codes.NotFound, "1")
	_, err = c.ModelConfig(ctx, &grpcpb.ModelConfigRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
}

// mnistRequest is a ModelInfer request of a batch of n digits (raw
// inputs), with its id.
func mnistRequest(id string, n int) *grpcpb.ModelInferRequest {
	raw := make([]byte, 0, 4*784*n)
	for range n {
		for _, v := range digit() {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	return &grpcpb.ModelInferRequest{ModelName: "mnist", Id: id,
		Inputs:           []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{int64(n), 784}}},
		RawInputContents: [][]byte{raw}}
}

func TestGRPCModelStatistics(t *testing.T) {
	_, url, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	ctx := ctxT(t)
	before := uint64(time.Now().UnixMilli())
	for i := range 2 {
		if _, err := c.ModelInfer(ctx, mnistRequest("ok", 3)); err != nil {
			t.Fatalf("infer %d: %v", i, err)
		}
	}
	bad := mnistRequest("bad", 1)
	bad.Inputs[0].Shape = []int64{1, 3}
	bad.RawInputContents[0] = bad.RawInputContents[0][:12]
	_, err := c.ModelInfer(ctx, bad)
	wantCode(t, err, codes.InvalidArgument)

	var http statsAnswer
	if r := do(t, "GET", url+"/v2/models/mnist/stats", ""); r.status != 200 || json.Unmarshal(r.body, &http) != nil || len(http.ModelStats) != 1 {
		t.Fatalf("HTTP stats: %d %s", r.status, r.body)
	}
	hs := http.ModelStats[0].InferenceStats
	for _, req := range []*grpcpb.ModelStatisticsRequest{{}, {Name: "mnist"}, {Name: "mnist", Version: "1"}} {
		resp, err := c.ModelStatistics(ctx, req)
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		if len(resp.ModelStats) != 1 {
			t.Fatalf("%v: %v", req, resp)
		}
		s := resp.ModelStats[0]
		st := s.GetInferenceStats()
		// 2 requests of batch 3 succeeded, 1 failed
		if s.Name != "mnist" || s.Version != "1" || s.InferenceCount != 6 || s.ExecutionCount != 2 || s.LastInference < before ||
			st.GetSuccess().GetCount() != 2 || st.GetFail().GetCount() != 1 || st.GetQueue().GetCount() != 2 ||
			st.GetComputeInput().GetCount() != 2 || st.GetComputeInfer().GetCount() != 2 || st.GetComputeOutput().GetCount() != 2 {
			t.Errorf("%v: %v", req, s)
		}
		parts := st.GetQueue().GetNs() + st.GetComputeInput().GetNs() + st.GetComputeInfer().GetNs() + st.GetComputeOutput().GetNs()
		if st.GetComputeInfer().GetNs() == 0 || st.GetFail().GetNs() == 0 || parts > st.GetSuccess().GetNs() {
			t.Errorf("%v: the phases (%d ns) do not fit in the successes' time: %v", req, parts, st)
		}
		// the same numbers as HTTP's statistics
		if st.GetSuccess().GetNs() != uint64(hs.Success.NS) || st.GetComputeInfer().GetNs() != uint64(hs.ComputeInfer.NS) || st.GetFail().GetNs() != uint64(hs.Fail.NS) {
			t.Errorf("%v: %v, HTTP says %+v", req, st, hs)
		}
	}
	_, err = c.ModelStatistics(ctx, &grpcpb.ModelStatisticsRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
	_, err = c.ModelStatistics(ctx, &grpcpb.ModelStatisticsRequest{Name: "mnist", Version: "2"})
	wantCode(t, err, codes.NotFound, "version")
	_, err = c.ModelStatistics(ctx, &grpcpb.ModelStatisticsRequest{Version: "1"})
	wantCode(t, err, codes.InvalidArgument, "model name")
}

func TestGRPCModelStatisticsBatches(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"b": {1: onnxbuild.Identity(tensor.Float32, []int{-1, 2})}},
		map[string]string{"b": "max_batch_size: 4\ndynamic_batching: {}\n"})
	_, _, c, _ := grpcTestServer(t, Options{Repository: openRepo(t, dir)})
	ctx := ctxT(t)
	req := &grpcpb.ModelInferRequest{ModelName: "b", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{
		{Name: "x", Datatype: "FP32", Shape: []int64{2, 2}, Contents: &grpcpb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}}
	if _, err := c.ModelInfer(ctx, req); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ModelStatistics(ctx, &grpcpb.ModelStatisticsRequest{Name: "b"})
	if err != nil || len(resp.ModelStats) != 1 {
		t.Fatalf("%v %v", resp, err)
	}
	s := resp.ModelStats[0]
	if s.InferenceCount != 2 || s.ExecutionCount != 1 || len(s.BatchStats) != 1 || s.BatchStats[0].BatchSize != 2 ||
		s.BatchStats[0].GetComputeInfer().GetCount() != 1 || s.BatchStats[0].GetComputeInfer().GetNs() == 0 {
		t.Errorf("one batch of 2: %v", s)
	}
}

func TestGRPCRepositoryIndex(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{
		"m":   {1: onnxbuild.Identity(tensor.Float32, []int{-1}), 2: onnxbuild.Identity(tensor.Float32, []int{-1})},
		"bad": {1: []byte("garbage")},
	}, nil)
	_, url, c, _ := grpcTestServer(t, Options{Repository: openRepo(t, dir)})
	ctx := ctxT(t)
	resp, err := c.RepositoryIndex(ctx, &grpcpb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	httpIndex := index(t, url)
	if len(resp.Models) != len(httpIndex) || len(resp.Models) != 3 {
		t.Fatalf("index: %v, HTTP %v", resp.Models, httpIndex)
	}
	for i, m := range resp.Models {
		h := httpIndex[i]
		if m.Name != h.Name || m.Version != h.Version || m.State != h.State || m.Reason != h.Reason {
			t.Errorf("entry %d: %v, HTTP %+v", i, m, h)
		}
	}
	if st, reason := stateOf(httpIndex, "bad", "1"); st != repository.StateUnavailable || reason == "" {
		t.Errorf("bad/1: %s %q", st, reason)
	}
	ready, err := c.RepositoryIndex(ctx, &grpcpb.RepositoryIndexRequest{Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ready.Models) != 2 {
		t.Fatalf("ready index: %v", ready.Models)
	}
	for _, m := range ready.Models {
		if m.Name != "m" || m.State != repository.StateReady {
			t.Errorf("ready index holds %v", m)
		}
	}
	_, err = c.RepositoryIndex(ctx, &grpcpb.RepositoryIndexRequest{RepositoryName: "other"})
	wantCode(t, err, codes.Unimplemented, "repository_name")
}

func TestGRPCRepositoryLoadUnload(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	ctx := ctxT(t)
	withToken := func(scheme, token string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", scheme+" "+token)
	}

	_, _, off, _ := grpcTestServer(t, Options{Repository: openRepo(t, dir)})
	_, err := off.RepositoryModelLoad(withToken("Bearer", adminToken), &grpcpb.RepositoryModelLoadRequest{ModelName: "m"})
	wantCode(t, err, codes.PermissionDenied, "--admin-token")
	_, err = off.RepositoryModelUnload(withToken("Bearer", adminToken), &grpcpb.RepositoryModelUnloadRequest{ModelName: "m"})
	wantCode(t, err, codes.PermissionDenied, "--admin-token")

	_, url, c, _ := grpcTestServer(t, Options{Repository: openRepo(t, dir), AdminToken: adminToken})
	for _, call := range []struct {
		name string
		ctx  context.Context
	}{{"no token", ctx}, {"wrong token", withToken("Bearer", "wrong")}, {"wrong scheme", withToken("Basic", adminToken)}} {
		_, err := c.RepositoryModelUnload(call.ctx, &grpcpb.RepositoryModelUnloadRequest{ModelName: "m"})
		wantCode(t, err, codes.Unauthenticated, "authorization: Bearer")
		_, err = c.RepositoryModelLoad(call.ctx, &grpcpb.RepositoryModelLoadRequest{ModelName: "m"})
		wantCode(t, err, codes.Unauthenticated, "authorization: Bearer")
	}
	if r, err := c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "m"}); err != nil || !r.Ready {
		t.Fatalf("refused calls changed the model: %v %v", r, err)
	}

	if _, err := c.RepositoryModelUnload(withToken("bearer", adminToken), &grpcpb.RepositoryModelUnloadRequest{ModelName: "m"}); err != nil {
		t.Fatalf("unload: %v", err)
	}
	_, err = c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "m"})
	wantCode(t, err, codes.NotFound, "m")
	if st, _ := stateOf(index(t, url), "m", ""); st != repository.StateUnavailable {
		t.Errorf("after unload, HTTP's index says %q", st)
	}

	if _, err := c.RepositoryModelLoad(withToken("BEARER", adminToken), &grpcpb.RepositoryModelLoadRequest{ModelName: "m"}); err != nil {
		t.Fatalf("load: %v", err)
	}
	if r, err := c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "m", Version: "1"}); err != nil || !r.Ready {
		t.Errorf("after load: %v %v", r, err)
	}
	// a new version on disk is picked up by a reload, as over HTTP
	os.MkdirAll(filepath.Join(dir, "m", "2"), 0o755)
	os.WriteFile(filepath.Join(dir, "m", "2", "model.onnx"), onnxbuild.Identity(tensor.Float32, []int{-1}), 0o644)
	if _, err := c.RepositoryModelLoad(withToken("Bearer", adminToken), &grpcpb.RepositoryModelLoadRequest{ModelName: "m"}); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if r, err := c.ModelReady(ctx, &grpcpb.ModelReadyRequest{Name: "m", Version: "2"}); err != nil || !r.Ready {
		t.Errorf("after reload, version 2: %v %v", r, err)
	}

	auth := withToken("Bearer", adminToken)
	_, err = c.RepositoryModelLoad(auth, &grpcpb.RepositoryModelLoadRequest{ModelName: "nope"})
	wantCode(t, err, codes.NotFound, "nope")
	_, err = c.RepositoryModelLoad(auth, &grpcpb.RepositoryModelLoadRequest{ModelName: "../etc"})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.RepositoryModelLoad(auth, &grpcpb.RepositoryModelLoadRequest{ModelName: "m", RepositoryName: "other"})
	wantCode(t, err, codes.Unimplemented, "repository_name")
	// The load-time config override, as HTTP's load takes it.
	override := func(k, config string) *grpcpb.RepositoryModelLoadRequest {
		return &grpcpb.RepositoryModelLoadRequest{ModelName: "m",
			Parameters: map[string]*grpcpb.ModelRepositoryParameter{k: {ParameterChoice: &grpcpb.ModelRepositoryParameter_StringParam{StringParam: config}}}}
	}
	if _, err = c.RepositoryModelLoad(auth, override("config", "{}")); err != nil {
		t.Errorf("load with an empty config override: %v", err)
	}
	_, err = c.RepositoryModelLoad(auth, override("config", `{"sequence_batching": {}}`))
	wantCode(t, err, codes.InvalidArgument, "sequence_batching")
	_, err = c.RepositoryModelLoad(auth, override("config", "not json"))
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.RepositoryModelLoad(auth, override("file:1/model.onnx", "x"))
	wantCode(t, err, codes.InvalidArgument, "file:1/model.onnx")
	_, err = c.RepositoryModelLoad(auth, &grpcpb.RepositoryModelLoadRequest{ModelName: "m",
		Parameters: map[string]*grpcpb.ModelRepositoryParameter{"config": {ParameterChoice: &grpcpb.ModelRepositoryParameter_BoolParam{BoolParam: true}}}})
	wantCode(t, err, codes.InvalidArgument, "string_param")
}

// TestGRPCModelStreamInfer sends several requests on one stream before
// reading any answer, one of them bad and one for an unknown model: the
// answers come in order, each as ModelInfer answers it alone, the errors
// as error_message, and the stream stays open after them.
func TestGRPCModelStreamInfer(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"big": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}, "mnist": {1: defaultmodel.ONNX}}, nil)
	repo := openRepo(t, dir)
	srv, _, c, _ := grpcTestServer(t, Options{Repository: repo})
	ctx := ctxT(t)
	bad := mnistRequest("bad", 1)
	bad.Inputs[0].Shape = []int64{1, 3}
	bad.RawInputContents[0] = bad.RawInputContents[0][:12]
	big := make([]byte, 0, 4*10000) // an answer the transport does not copy
	for i := range 10000 {
		big = binary.LittleEndian.AppendUint32(big, math.Float32bits(float32(i)/7))
	}
	reqs := []*grpcpb.ModelInferRequest{
		mnistRequest("r0", 1),
		{ModelName: "big", Id: "r1", Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{10000}}}, RawInputContents: [][]byte{big}},
		bad,
		{ModelName: "nope", Id: "r3"},
		mnistRequest("r4", 2),
	}
	// what ModelInfer answers each
	var want []*grpcpb.ModelStreamInferResponse
	for _, r := range reqs {
		resp, err := c.ModelInfer(ctx, r)
		if err != nil {
			want = append(want, &grpcpb.ModelStreamInferResponse{ErrorMessage: status.Convert(err).Message()})
			continue
		}
		want = append(want, &grpcpb.ModelStreamInferResponse{InferResponse: resp})
	}
	if want[2].ErrorMessage == "" || want[3].ErrorMessage == "" || want[0].InferResponse == nil || want[1].InferResponse == nil {
		t.Fatalf("ModelInfer's answers: %v", summary(want))
	}

	stream, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range reqs {
		got, err := stream.Recv()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if !proto.Equal(got, want[i]) {
			t.Errorf("answer %d:\n got %v\nwant %v", i, summary([]*grpcpb.ModelStreamInferResponse{got}), summary(want[i:i+1]))
		}
	}
	// still open after the errors
	if err := stream.Send(mnistRequest("r5", 1)); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil || got.ErrorMessage != "" || got.GetInferResponse().GetId() != "r5" ||
		!proto.Equal(got.GetInferResponse().GetOutputs()[0], want[0].InferResponse.Outputs[0]) {
		t.Fatalf("after the errors: %v %v", got, err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("after CloseSend: %v, want io.EOF", err)
	}
	budgetFreed(t, srv.s)

	// every streamed request counts in the statistics, as ModelInfer's
	st, err := c.ModelStatistics(ctx, &grpcpb.ModelStatisticsRequest{Name: "mnist"})
	if err != nil {
		t.Fatal(err)
	}
	// r0, bad and r4 twice (ModelInfer, then the stream), r5 once
	if s := st.ModelStats[0].GetInferenceStats(); s.GetSuccess().GetCount() != 5 || s.GetFail().GetCount() != 2 {
		t.Errorf("statistics after the stream: %v", st.ModelStats[0])
	}
}

// summary names each answer by its id or its error.
func summary(answers []*grpcpb.ModelStreamInferResponse) []string {
	var s []string
	for _, a := range answers {
		if a.ErrorMessage != "" {
			s = append(s, "error: "+a.ErrorMessage)
		} else {
			s = append(s, "id: "+a.GetInferResponse().GetId())
		}
	}
	return s
}

// TestGRPCModelStreamInferLimits: a stream's requests take work slots as
// ModelInfer's do; one refused (the server is busy) is an error_message
// and the stream goes on.
func TestGRPCModelStreamInferLimits(t *testing.T) {
	srv, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), MaxInFlight: 1})
	ctx := ctxT(t)
	srv.s.inflight <- struct{}{} // the only slot, taken
	stream, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(mnistRequest("busy", 1)); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil || got.InferResponse != nil || got.ErrorMessage == "" {
		t.Fatalf("busy: %v %v", got, err)
	}
	<-srv.s.inflight
	if err := stream.Send(mnistRequest("free", 1)); err != nil {
		t.Fatal(err)
	}
	got, err = stream.Recv()
	if err != nil || got.GetInferResponse().GetId() != "free" {
		t.Fatalf("after the slot came back: %v %v", got, err)
	}
	stream.CloseSend()
	budgetFreed(t, srv.s)
}

// TestGRPCModelStreamInferDrain: a stream waiting for its next request
// ends with Unavailable once the server drains.
func TestGRPCModelStreamInferDrain(t *testing.T) {
	var draining atomic.Bool
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo(), Draining: draining.Load})
	stream, err := c.ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(mnistRequest("r0", 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := stream.Recv(); err != nil || got.GetInferResponse().GetId() != "r0" {
		t.Fatalf("%v %v", got, err)
	}
	draining.Store(true)
	_, err = stream.Recv()
	wantCode(t, err, codes.Unavailable, "shutting down")
}

func TestGRPCTritonUnimplemented(t *testing.T) {
	_, _, c, _ := grpcTestServer(t, Options{Repository: mnistRepo()})
	ctx := ctxT(t)
	for _, call := range []struct {
		name, feature string
		call          func() error
	}{
		{"SystemSharedMemoryStatus", "system shared memory", func() error {
			_, err := c.SystemSharedMemoryStatus(ctx, &grpcpb.SystemSharedMemoryStatusRequest{})
			return err
		}},
		{"SystemSharedMemoryRegister", "system shared memory", func() error {
			_, err := c.SystemSharedMemoryRegister(ctx, &grpcpb.SystemSharedMemoryRegisterRequest{Name: "r", Key: "/k", ByteSize: 8})
			return err
		}},
		{"SystemSharedMemoryUnregister", "system shared memory", func() error {
			_, err := c.SystemSharedMemoryUnregister(ctx, &grpcpb.SystemSharedMemoryUnregisterRequest{})
			return err
		}},
		{"CudaSharedMemoryStatus", "CUDA shared memory", func() error {
			_, err := c.CudaSharedMemoryStatus(ctx, &grpcpb.CudaSharedMemoryStatusRequest{})
			return err
		}},
		{"CudaSharedMemoryRegister", "CUDA shared memory", func() error {
			_, err := c.CudaSharedMemoryRegister(ctx, &grpcpb.CudaSharedMemoryRegisterRequest{Name: "r"})
			return err
		}},
		{"CudaSharedMemoryUnregister", "CUDA shared memory", func() error {
			_, err := c.CudaSharedMemoryUnregister(ctx, &grpcpb.CudaSharedMemoryUnregisterRequest{})
			return err
		}},
		{"TraceSetting", "trace settings", func() error {
			_, err := c.TraceSetting(ctx, &grpcpb.TraceSettingRequest{})
			return err
		}},
		{"LogSettings", "log settings", func() error {
			_, err := c.LogSettings(ctx, &grpcpb.LogSettingsRequest{})
			return err
		}},
	} {
		t.Run(call.name, func(t *testing.T) { wantCode(t, call.call(), codes.Unimplemented, call.feature, "not supported") })
	}
}
