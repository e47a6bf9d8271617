package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"google.golang.org/grpc/metadata"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/repository"
)

// Triton's RPCs on GRPCInferenceService, beside the Open Inference
// Protocol's six: the model configuration, statistics and repository
// extensions answer what their HTTP routes answer, as Triton's messages;
// ModelStreamInfer is in grpc_stream.go. Shared memory, trace settings
// and log settings are not served: each answers Unimplemented naming the
// feature.

// tritonPlatform and tritonBackend are what ModelConfig reports a model
// runs on: Triton's names for ONNX models, which Triton's clients expect.
const (
	tritonPlatform = "onnxruntime_onnx"
	tritonBackend  = "onnxruntime"
)

// ModelConfig answers Triton's ModelConfig message for a model version:
// its name, platform and backend, max_batch_size, the inputs and outputs
// of the version (dims without the batch dimension when max_batch_size
// > 0), and from its config the version policy (all versions when none is
// given), dynamic batching, instance groups, model file and parameters.
func (g *inferenceService) ModelConfig(ctx context.Context, req *grpcpb.ModelConfigRequest) (*grpcpb.ModelConfigResponse, error) {
	e, v, release, err := g.s.repo.Get(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	defer release()
	return &grpcpb.ModelConfigResponse{Config: tritonConfig(e, v)}, nil
}

func tritonConfig(e *repository.Entry, v *repository.Version) *grpcpb.ModelConfig {
	c := &grpcpb.ModelConfig{
		Name: e.Name, Platform: tritonPlatform, Backend: tritonBackend,
		VersionPolicy:        &grpcpb.ModelVersionPolicy{PolicyChoice: &grpcpb.ModelVersionPolicy_All_{All: &grpcpb.ModelVersionPolicy_All{}}},
		DefaultModelFilename: "model.onnx",
	}
	cfg := e.Config
	if cfg != nil {
		c.MaxBatchSize = clampInt32(cfg.MaxBatchSize)
		if p := cfg.VersionPolicy; p != nil {
			switch {
			case p.Latest != nil:
				c.VersionPolicy.PolicyChoice = &grpcpb.ModelVersionPolicy_Latest_{Latest: &grpcpb.ModelVersionPolicy_Latest{NumVersions: uint32(max(p.Latest.NumVersions, 0))}}
			case p.Specific != nil:
				c.VersionPolicy.PolicyChoice = &grpcpb.ModelVersionPolicy_Specific_{Specific: &grpcpb.ModelVersionPolicy_Specific{Versions: slices.Clone(p.Specific.Versions)}}
			}
		}
		if d := cfg.DynamicBatching; d != nil {
			db := &grpcpb.ModelDynamicBatching{MaxQueueDelayMicroseconds: uint64(max(d.MaxQueueDelayMicroseconds, 0))}
			for _, n := range d.PreferredBatchSize {
				db.PreferredBatchSize = append(db.PreferredBatchSize, clampInt32(n))
			}
			if d.MaxQueueSize > 0 {
				db.DefaultQueuePolicy = &grpcpb.ModelQueuePolicy{MaxQueueSize: uint32(min(d.MaxQueueSize, math.MaxUint32))}
			}
			c.SchedulingChoice = &grpcpb.ModelConfig_DynamicBatching{DynamicBatching: db}
		}
		for i, ig := range cfg.InstanceGroups {
			name := ig.Name
			if name == "" {
				name = e.Name + "_" + strconv.Itoa(i)
			}
			c.InstanceGroup = append(c.InstanceGroup, &grpcpb.ModelInstanceGroup{Name: name, Kind: grpcpb.ModelInstanceGroup_KIND_CPU, Count: clampInt32(max(ig.Count, 1))})
		}
		if cfg.ModelFile != "" {
			c.DefaultModelFilename = cfg.ModelFile
		}
		if len(cfg.Parameters) > 0 {
			c.Parameters = make(map[string]*grpcpb.ModelParameter, len(cfg.Parameters))
			for k, val := range cfg.Parameters {
				c.Parameters[k] = &grpcpb.ModelParameter{StringValue: val}
			}
		}
	}
	batched := c.MaxBatchSize > 0
	for _, sp := range v.Model.Inputs {
		c.Input = append(c.Input, &grpcpb.ModelInput{Name: sp.Name, DataType: tritonDataType(sp), Dims: tritonDims(sp.Shape, batched)})
	}
	for _, sp := range v.Model.Outputs {
		c.Output = append(c.Output, &grpcpb.ModelOutput{Name: sp.Name, DataType: tritonDataType(sp), Dims: tritonDims(sp.Shape, batched)})
	}
	return c
}

// tritonDataType is a tensor's datatype as model_config.proto names it:
// TYPE_ and the protocol's name, BYTES being TYPE_STRING.
func tritonDataType(sp model.IOSpec) grpcpb.DataType {
	name := sp.DType.String()
	if name == "BYTES" {
		name = "STRING"
	}
	return grpcpb.DataType(grpcpb.DataType_value["TYPE_"+name])
}

// tritonDims are a tensor's dims (-1 dynamic), the batch dimension left
// out when the model batches.
func tritonDims(shape []int, batched bool) []int64 {
	if batched && len(shape) > 0 {
		shape = shape[1:]
	}
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	return dims
}

func clampInt32(n int64) int32 { return int32(min(max(n, math.MinInt32), math.MaxInt32)) }

// ModelStatistics answers what GET /v2/models[/{m}[/versions/{v}]]/stats
// does: every version of every model when no name is given, every loaded
// version of one model, or one version.
func (g *inferenceService) ModelStatistics(ctx context.Context, req *grpcpb.ModelStatisticsRequest) (*grpcpb.ModelStatisticsResponse, error) {
	resp := &grpcpb.ModelStatisticsResponse{ModelStats: []*grpcpb.ModelStatistics{}}
	name, version := req.GetName(), req.GetVersion()
	if name == "" {
		if version != "" {
			return nil, errorf(CodeInvalid, fmt.Sprintf("version %q without a model name: name the model, or give neither for every model", version))
		}
		for _, e := range g.s.repo.Entries() {
			for _, v := range e.Versions {
				resp.ModelStats = append(resp.ModelStats, tritonStat(statOf(e.Name, v)))
			}
		}
		return resp, nil
	}
	e, v, release, err := g.s.repo.Get(name, version)
	if err != nil {
		return nil, err
	}
	release()
	if version != "" {
		resp.ModelStats = append(resp.ModelStats, tritonStat(statOf(e.Name, v)))
		return resp, nil
	}
	for _, v := range e.Versions {
		resp.ModelStats = append(resp.ModelStats, tritonStat(statOf(e.Name, v)))
	}
	return resp, nil
}

func tritonStat(st modelStat) *grpcpb.ModelStatistics {
	is := st.InferenceStats
	m := &grpcpb.ModelStatistics{
		Name: st.Name, Version: st.Version,
		LastInference: uint64(max(st.LastInference, 0)), InferenceCount: uint64(max(st.InferenceCount, 0)), ExecutionCount: uint64(max(st.ExecutionCount, 0)),
		InferenceStats: &grpcpb.InferStatistics{
			Success: tritonDuration(is.Success), Fail: tritonDuration(is.Fail), Queue: tritonDuration(is.Queue),
			ComputeInput: tritonDuration(is.ComputeInput), ComputeInfer: tritonDuration(is.ComputeInfer), ComputeOutput: tritonDuration(is.ComputeOutput),
			CacheHit: &grpcpb.StatisticDuration{}, CacheMiss: &grpcpb.StatisticDuration{},
		},
	}
	for _, b := range st.BatchStats {
		m.BatchStats = append(m.BatchStats, &grpcpb.InferBatchStatistics{
			BatchSize:    uint64(max(b.BatchSize, 0)),
			ComputeInput: &grpcpb.StatisticDuration{}, ComputeInfer: tritonDuration(b.ComputeInfer), ComputeOutput: &grpcpb.StatisticDuration{},
		})
	}
	return m
}

func tritonDuration(d repository.Duration) *grpcpb.StatisticDuration {
	return &grpcpb.StatisticDuration{Count: uint64(max(d.Count, 0)), Ns: uint64(max(d.NS, 0))}
}

// RepositoryIndex answers what POST /v2/repository/index does: every
// model of the repository (each version served, each that failed) with
// its state and reason; only those ready with ready set.
func (g *inferenceService) RepositoryIndex(ctx context.Context, req *grpcpb.RepositoryIndexRequest) (*grpcpb.RepositoryIndexResponse, error) {
	if err := checkRepositoryName(req.GetRepositoryName()); err != nil {
		return nil, err
	}
	resp := &grpcpb.RepositoryIndexResponse{Models: []*grpcpb.RepositoryIndexResponse_ModelIndex{}}
	for _, m := range g.s.repo.Index() {
		if req.GetReady() && m.State != repository.StateReady {
			continue
		}
		resp.Models = append(resp.Models, &grpcpb.RepositoryIndexResponse_ModelIndex{Name: m.Name, Version: m.Version, State: m.State, Reason: m.Reason})
	}
	return resp, nil
}

// RepositoryModelLoad loads (or reloads) a model as POST
// /v2/repository/models/{m}/load does, with the admin token.
func (g *inferenceService) RepositoryModelLoad(ctx context.Context, req *grpcpb.RepositoryModelLoadRequest) (*grpcpb.RepositoryModelLoadResponse, error) {
	if err := g.s.grpcAdmin(ctx); err != nil {
		return nil, err
	}
	if err := checkRepositoryName(req.GetRepositoryName()); err != nil {
		return nil, err
	}
	cfg, err := grpcLoadOverride(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.s.grpcControlContext(ctx)
	defer cancel()
	if err := g.s.repo.LoadWith(ctx, req.GetModelName(), cfg); err != nil {
		return nil, err
	}
	return &grpcpb.RepositoryModelLoadResponse{}, nil
}

// grpcLoadOverride returns the config a load's "config" parameter holds
// (Triton's ModelConfig as JSON, as HTTP's load takes it), nil without
// one; any other parameter is refused.
func grpcLoadOverride(req *grpcpb.RepositoryModelLoadRequest) (*repository.Config, error) {
	var cfg *repository.Config
	for _, k := range slices.Sorted(maps.Keys(req.GetParameters())) {
		p := req.GetParameters()[k]
		if k != "config" {
			return nil, errorf(CodeInvalid, fmt.Sprintf("load parameter %q is not supported: quantserve takes \"config\" (model files are read from the repository)", k))
		}
		text, ok := p.GetParameterChoice().(*grpcpb.ModelRepositoryParameter_StringParam)
		if !ok {
			return nil, errorf(CodeInvalid, "load parameter \"config\" must be a string_param holding a ModelConfig as JSON")
		}
		c, err := repository.ParseConfigJSON([]byte(text.StringParam), req.GetModelName())
		if err != nil {
			return nil, errorf(CodeInvalid, err.Error())
		}
		cfg = c
	}
	return cfg, nil
}

// RepositoryModelUnload unloads a model as POST
// /v2/repository/models/{m}/unload does, with the admin token.
func (g *inferenceService) RepositoryModelUnload(ctx context.Context, req *grpcpb.RepositoryModelUnloadRequest) (*grpcpb.RepositoryModelUnloadResponse, error) {
	if err := g.s.grpcAdmin(ctx); err != nil {
		return nil, err
	}
	if err := checkRepositoryName(req.GetRepositoryName()); err != nil {
		return nil, err
	}
	if len(req.GetParameters()) > 0 {
		return nil, errorf(CodeUnimplemented, fmt.Sprintf("unload parameters %q are not supported", slices.Sorted(maps.Keys(req.GetParameters()))))
	}
	ctx, cancel := g.s.grpcControlContext(ctx)
	defer cancel()
	if err := g.s.repo.Unload(ctx, req.GetModelName()); err != nil {
		return nil, err
	}
	return &grpcpb.RepositoryModelUnloadResponse{}, nil
}

// checkRepositoryName refuses a repository name: the server has one
// repository, named by none.
func checkRepositoryName(name string) error {
	if name != "" {
		return errorf(CodeUnimplemented, fmt.Sprintf("repository_name %q: the server serves one repository; leave repository_name empty", name))
	}
	return nil
}

// grpcControlContext bounds a load's or unload's wait by
// --request-timeout, as controlContext does for HTTP: a model control
// call runs to its end when the client goes away.
func (s *server) grpcControlContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
}

// grpcAdmin is requireAdmin for gRPC: the call's "authorization" metadata
// must be "Bearer <admin token>" (the scheme in any case);
// PermissionDenied when the server has no admin token, Unauthenticated
// when the token is missing or wrong.
func (s *server) grpcAdmin(ctx context.Context) error {
	if s.adminToken == "" {
		return errorf(CodePermissionDenied, "model control is disabled: start serve with --admin-token (or QUANTSERVE_ADMIN_TOKEN) and send \"authorization: Bearer <token>\" metadata")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, h := range md.Get("authorization") {
		if got, ok := bearerToken(h); ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.adminToken)) == 1 {
			return nil
		}
	}
	return errorf(CodeUnauthenticated, "this call needs \"authorization: Bearer <admin token>\" metadata with the server's --admin-token")
}

// The RPCs quantserve does not serve, each Unimplemented with what to do
// instead.

func (g *inferenceService) SystemSharedMemoryStatus(context.Context, *grpcpb.SystemSharedMemoryStatusRequest) (*grpcpb.SystemSharedMemoryStatusResponse, error) {
	return nil, errSystemSharedMemory
}

func (g *inferenceService) SystemSharedMemoryRegister(context.Context, *grpcpb.SystemSharedMemoryRegisterRequest) (*grpcpb.SystemSharedMemoryRegisterResponse, error) {
	return nil, errSystemSharedMemory
}

func (g *inferenceService) SystemSharedMemoryUnregister(context.Context, *grpcpb.SystemSharedMemoryUnregisterRequest) (*grpcpb.SystemSharedMemoryUnregisterResponse, error) {
	return nil, errSystemSharedMemory
}

func (g *inferenceService) CudaSharedMemoryStatus(context.Context, *grpcpb.CudaSharedMemoryStatusRequest) (*grpcpb.CudaSharedMemoryStatusResponse, error) {
	return nil, errCUDASharedMemory
}

func (g *inferenceService) CudaSharedMemoryRegister(context.Context, *grpcpb.CudaSharedMemoryRegisterRequest) (*grpcpb.CudaSharedMemoryRegisterResponse, error) {
	return nil, errCUDASharedMemory
}

func (g *inferenceService) CudaSharedMemoryUnregister(context.Context, *grpcpb.CudaSharedMemoryUnregisterRequest) (*grpcpb.CudaSharedMemoryUnregisterResponse, error) {
	return nil, errCUDASharedMemory
}

func (g *inferenceService) TraceSetting(context.Context, *grpcpb.TraceSettingRequest) (*grpcpb.TraceSettingResponse, error) {
	return nil, errorf(CodeUnimplemented, "trace settings are not supported: tracing is OpenTelemetry, set at start-up (OTEL_* environment variables); a request joins its caller's trace through traceparent metadata")
}

func (g *inferenceService) LogSettings(context.Context, *grpcpb.LogSettingsRequest) (*grpcpb.LogSettingsResponse, error) {
	return nil, errorf(CodeUnimplemented, "log settings are not supported: the log level and format are set at start-up (--log-level, --log-format)")
}

var (
	errSystemSharedMemory = errorf(CodeUnimplemented, "system shared memory is not supported: send tensors in the request (raw_input_contents)")
	errCUDASharedMemory   = errorf(CodeUnimplemented, "CUDA shared memory is not supported: quantserve runs on the CPU; send tensors in the request (raw_input_contents)")
)
