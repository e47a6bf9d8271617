package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/repository"
	"github.com/quantserve/quantserve/telemetry"
	"github.com/quantserve/quantserve/tensor"
)

// Triton's statistics extension: GET /v2/models[/{m}[/versions/{v}]]/stats.

type statsAnswer struct {
	ModelStats []modelStat `json:"model_stats"`
}

type modelStat struct {
	Name           string         `json:"name"`
	Version        string         `json:"version"`
	LastInference  int64          `json:"last_inference"`
	InferenceCount int64          `json:"inference_count"`
	ExecutionCount int64          `json:"execution_count"`
	InferenceStats inferenceStats `json:"inference_stats"`
	BatchStats     []batchStat    `json:"batch_stats,omitempty"`
}

// batchStat is Triton's per-batch-size statistic, for versions with
// dynamic batching: executions of that many rows and their time
// (stacking the inputs and running the model).
type batchStat struct {
	BatchSize    int                 `json:"batch_size"`
	ComputeInfer repository.Duration `json:"compute_infer"`
}

type inferenceStats struct {
	Success       repository.Duration `json:"success"`
	Fail          repository.Duration `json:"fail"`
	Queue         repository.Duration `json:"queue"`
	ComputeInput  repository.Duration `json:"compute_input"`
	ComputeInfer  repository.Duration `json:"compute_infer"`
	ComputeOutput repository.Duration `json:"compute_output"`
}

func statOf(name string, v *repository.Version) modelStat {
	s := v.Stats.Snapshot()
	st := modelStat{
		Name: name, Version: strconv.FormatInt(v.Number, 10),
		LastInference: s.LastInference, InferenceCount: s.InferenceCount, ExecutionCount: s.ExecutionCount,
		InferenceStats: inferenceStats{
			Success: s.Success, Fail: s.Fail, Queue: s.Queue,
			ComputeInput: s.ComputeInput, ComputeInfer: s.ComputeInfer, ComputeOutput: s.ComputeOutput,
		},
	}
	if v.Batcher != nil { // executions are batches: fewer than requests
		b := v.Batcher.Stats()
		st.ExecutionCount = b.Executions
		for _, bs := range b.Batches {
			st.BatchStats = append(st.BatchStats, batchStat{BatchSize: bs.Size, ComputeInfer: repository.Duration{Count: bs.Count, NS: bs.NS}})
		}
	}
	return st
}

// stats answers for every version of every model, every version of one
// model, or one version.
func (s *server) stats(w http.ResponseWriter, r *http.Request) error {
	name, version := chi.URLParam(r, "model"), chi.URLParam(r, "version")
	ans := statsAnswer{ModelStats: []modelStat{}}
	if name == "" {
		for _, e := range s.repo.Entries() {
			for _, v := range e.Versions {
				ans.ModelStats = append(ans.ModelStats, statOf(e.Name, v))
			}
		}
		writeJSON(w, http.StatusOK, ans)
		return nil
	}
	e, v, release, err := s.repo.Get(name, version)
	if err != nil {
		return err
	}
	release()
	if version != "" {
		ans.ModelStats = append(ans.ModelStats, statOf(e.Name, v))
	} else {
		for _, v := range e.Versions {
			ans.ModelStats = append(ans.ModelStats, statOf(e.Name, v))
		}
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

// batchSize is the number of inferences a request holds: the first
// dimension of its first input when the model's first input has a dynamic
// first dimension, else 1.
func batchSize(m *model.Model, inputs map[string]*tensor.Tensor) int64 {
	if len(m.Inputs) == 0 {
		return 1
	}
	spec := m.Inputs[0]
	t := inputs[spec.Name]
	if t == nil || len(spec.Shape) == 0 || spec.Shape[0] != -1 || len(t.Shape) == 0 {
		return 1
	}
	return int64(t.Shape[0])
}

// Triton's model configuration extension: GET /v2/models/{m}[/versions/{v}]/config.

type modelConfig struct {
	Name          string            `json:"name"`
	Version       string            `json:"version"`
	Platform      string            `json:"platform"`
	MaxBatchSize  int64             `json:"max_batch_size"`
	VersionPolicy versionPolicy     `json:"version_policy"`
	Input         []tensorConfig    `json:"input"`
	Output        []tensorConfig    `json:"output"`
	Kernels       string            `json:"kernels"`
	Quantization  []model.Layer     `json:"quantization"`
	ConfigFile    string            `json:"config_file,omitempty"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	Quantserve    quantserveConfig  `json:"quantserve"`
}

// quantserveConfig is how quantserve compiled the version, beside
// Triton's fields: the quantization asked for (the server's --quantize,
// or the config's quantize key or parameter), its scheme, the nodes the
// config excludes, how many layers run on the int8 kernels and the nodes
// of those layers. Each layer's kernels, and for a float32 layer of a
// quantized model why, are in the quantization list.
type quantserveConfig struct {
	Quantize        string   `json:"quantize"` // int8 or none
	Scheme          string   `json:"scheme,omitempty"`
	QuantizeExclude []string `json:"quantize_exclude"`
	Layers          int      `json:"layers"`
	Int8Layers      int      `json:"int8_layers"`
	Int8Nodes       []string `json:"int8_nodes"`
}

// quantserveConfigOf is version v's quantserveConfig.
func quantserveConfigOf(v *repository.Version) quantserveConfig {
	q := quantserveConfig{Quantize: "none", QuantizeExclude: v.Options.QuantizeExclude,
		Layers: len(v.Model.Layers), Int8Layers: model.Int8Layers(v.Model.Layers), Int8Nodes: []string{}}
	for _, l := range v.Model.Layers {
		if l.Int8() {
			q.Int8Nodes = append(q.Int8Nodes, l.Node)
		}
	}
	if v.Options.Quantize {
		q.Quantize, q.Scheme = "int8", v.Options.Scheme.String()
	}
	if q.QuantizeExclude == nil {
		q.QuantizeExclude = []string{}
	}
	return q
}

type versionPolicy struct {
	Latest   *repository.LatestPolicy   `json:"latest,omitempty"`
	Specific *repository.SpecificPolicy `json:"specific,omitempty"`
	All      *struct{}                  `json:"all,omitempty"`
}

type tensorConfig struct {
	Name     string `json:"name"`
	DataType string `json:"data_type"`
	Dims     []int  `json:"dims"`
}

func tensorConfigs(specs []model.IOSpec, batched bool) []tensorConfig {
	out := make([]tensorConfig, 0, len(specs))
	for _, sp := range specs {
		dims := sp.Shape
		if batched && len(dims) > 0 {
			dims = dims[1:]
		}
		if dims == nil {
			dims = []int{}
		}
		out = append(out, tensorConfig{Name: sp.Name, DataType: "TYPE_" + sp.DType.String(), Dims: dims})
	}
	return out
}

func (s *server) modelConfig(w http.ResponseWriter, r *http.Request) error {
	e, v, release, err := s.lookup(r)
	if err != nil {
		return err
	}
	defer release()
	c := modelConfig{
		Name: e.Name, Version: strconv.FormatInt(v.Number, 10), Platform: repository.Platform,
		VersionPolicy: versionPolicy{All: &struct{}{}},
		Kernels:       v.Model.Kernels, Quantization: v.Model.Layers, Quantserve: quantserveConfigOf(v),
	}
	if c.Quantization == nil {
		c.Quantization = []model.Layer{}
	}
	if cfg := e.Config; cfg != nil {
		c.MaxBatchSize = cfg.MaxBatchSize
		c.ConfigFile = cfg.File
		c.Parameters = cfg.Parameters
		if p := cfg.VersionPolicy; p != nil {
			c.VersionPolicy = versionPolicy{Latest: p.Latest, Specific: p.Specific, All: p.All}
		}
	}
	c.Input = tensorConfigs(v.Model.Inputs, c.MaxBatchSize > 0)
	c.Output = tensorConfigs(v.Model.Outputs, c.MaxBatchSize > 0)
	writeJSON(w, http.StatusOK, c)
	return nil
}

// observeLayers exports, in /metrics, every loaded version's layers by the
// kernels they run on (telemetry.ObserveLayers): the int8_layers of its
// metadata, configuration and load log.
func (s *server) observeLayers() {
	if s.tel == nil || s.repo == nil {
		return
	}
	err := s.tel.ObserveLayers(func() []telemetry.ModelLayers {
		var out []telemetry.ModelLayers
		for _, e := range s.repo.Entries() {
			for _, v := range e.Versions {
				out = append(out, telemetry.ModelLayers{Model: e.Name, Version: strconv.FormatInt(v.Number, 10),
					Layers: len(v.Model.Layers), Int8: model.Int8Layers(v.Model.Layers)})
			}
		}
		return out
	})
	if err != nil {
		s.log.Error("model layer metrics disabled", "err", err)
	}
}
