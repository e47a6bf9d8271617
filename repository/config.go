package repository

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/quantserve/quantserve/batching"
	"github.com/quantserve/quantserve/model"
	inference "github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/quant"
)

// Config is a model's config: Triton's ModelConfig, read from a
// config.pbtxt (ParseTritonConfig), a config.yaml (ParseConfig) or a load
// request (ParseConfigJSON), and checked. config.yaml holds the same fields
// as YAML, plus a few of quantserve's own:
//
//	platform: onnx_onnxv1     # if given, onnx_onnxv1 or onnxruntime_onnx
//	default_version: 2        # version served when a request names none
//	                          # (default: the highest loaded version)
//	parameters:               # string key/values shown in the model's
//	  owner: vision-team      # metadata under "parameters"
//	quantize: int8            # int8 or none (default: the server's --quantize)
//	quantize_scheme: per_channel  # per_channel, per_block or per_tensor
//	version_policy:           # which versions load (default: all)
//	  latest: {num_versions: 2}   # or specific: {versions: [1, 3]}, or all: {}
//	max_batch_size: 32        # dimension 0 is the batch (default 0: no batch dimension);
//	                          # without dynamic_batching, larger batches get 400
//	dynamic_batching:         # stack concurrent requests (needs max_batch_size > 0);
//	                          # a request larger than max_batch_size runs alone
//	  max_queue_delay_microseconds: 0  # longest wait for more rows
//	  preferred_batch_size: [8, 16]    # sizes sent as soon as they form
//	  max_queue_size: 0                # waiting requests before 503 (0: --max-inflight);
//	                                   # Triton's default_queue_policy.max_queue_size also works
//	instance_group:           # copies of the model executing at once (default:
//	  - {kind: KIND_CPU, count: 2}  # unbounded without batching, one batch per core with it,
//	                                # a partial batch only when none runs)
//	input:                    # declared inputs and outputs, checked against the model
//	  - {name: x, data_type: TYPE_FP32, dims: [3, 224, 224]}
//	model_warmup:             # requests run at load, before the model is ready
//	  - {name: w, batch_size: 1, inputs: {x: {data_type: TYPE_FP32, dims: [3, 224, 224], zero_data: true}}}
//
// Unknown keys are an error, so a misspelt key never silently does nothing.
type Config struct {
	Platform       string
	DefaultVersion int64
	Parameters     map[string]string
	Quantize       string
	QuantizeScheme string
	VersionPolicy  *VersionPolicy
	MaxBatchSize   int64
	// DynamicBatching, when given (even empty) with MaxBatchSize > 0,
	// turns dynamic batching on (package batching).
	DynamicBatching *DynamicBatching
	// InstanceGroups bound how many executions of a version run at once:
	// batches with dynamic batching, requests without.
	InstanceGroups []InstanceGroup

	Name      string         // the model's name, as the config gives it
	Inputs    []TensorConfig // declared inputs, checked against the model
	Outputs   []TensorConfig // declared outputs, checked against the model
	ModelFile string         // default_model_filename; "" means model.onnx
	Warmup    []WarmupSample // model_warmup: run at load, before the version serves
	// Ignored lists the fields given that quantserve accepts but does not
	// apply, as they do not change answers (optimization, ...).
	Ignored []string
	// Triton is the config as Triton's ModelConfig message.
	Triton *inference.ModelConfig

	File string // where the config came from: config.yaml, config.pbtxt or OverrideFile
}

// DynamicBatching is Triton's dynamic_batching block. max_queue_size,
// which Triton puts under default_queue_policy, is given here directly.
type DynamicBatching struct {
	MaxQueueDelayMicroseconds int64
	PreferredBatchSize        []int64
	MaxQueueSize              int64
}

// InstanceGroup is an entry of Triton's instance_group: Count copies of
// the model (1 if not given) on the CPU (kind KIND_CPU, or KIND_AUTO, which
// is the CPU here). Name labels it and changes nothing.
type InstanceGroup struct {
	Name  string
	Kind  string
	Count int64
}

// maxInstances bounds the instances of a model.
const maxInstances = 1024

// Instances returns how many executions of a version may run at once, the
// counts of the instance groups summed; 0 when no group is given.
func (c *Config) Instances() int {
	if c == nil {
		return 0
	}
	n := int64(0)
	for _, g := range c.InstanceGroups {
		n += max(g.Count, 1)
	}
	return int(min(n, maxInstances+1))
}

// checkInstances checks the instance groups.
func (c *Config) checkInstances(file string) error {
	total := int64(0)
	for i, g := range c.InstanceGroups {
		switch g.Kind {
		case "", "KIND_CPU", "KIND_AUTO":
		default:
			return fmt.Errorf("%s: instance_group %d: kind %s: quantserve runs models on the CPU (KIND_CPU or KIND_AUTO)", file, i, g.Kind)
		}
		if g.Count < 0 || g.Count > maxInstances {
			return fmt.Errorf("%s: instance_group %d: count %d: from 1 to %d", file, i, g.Count, maxInstances)
		}
		total += max(g.Count, 1)
	}
	if total > maxInstances {
		return fmt.Errorf("%s: instance_group: %d instances in all, at most %d", file, total, maxInstances)
	}
	return nil
}

// maxBatchSize bounds max_batch_size and the batching sizes: a batch's
// stacked inputs are still bounded by tensor.MaxElements.
const maxBatchSize = 1 << 20

// Batching returns the model's batching configuration; a nil config, or
// one without dynamic_batching, does not batch.
func (c *Config) Batching() batching.Config {
	if c == nil {
		return batching.Config{}
	}
	bc := batching.Config{MaxBatchSize: int(min(max(c.MaxBatchSize, -1), maxBatchSize+1)), Instances: c.Instances()}
	if d := c.DynamicBatching; d != nil {
		bc.Dynamic = true
		bc.MaxQueueDelay = time.Duration(min(max(d.MaxQueueDelayMicroseconds, -1), int64(time.Hour/time.Microsecond))) * time.Microsecond
		for _, p := range d.PreferredBatchSize {
			bc.PreferredBatchSizes = append(bc.PreferredBatchSizes, int(min(max(p, -1), maxBatchSize+1)))
		}
		bc.MaxQueueSize = int(min(max(d.MaxQueueSize, -1), math.MaxInt32))
	}
	return bc
}

// checkBatching checks the batching keys.
func (c *Config) checkBatching(file string) error {
	if c.MaxBatchSize < 0 || c.MaxBatchSize > maxBatchSize {
		return fmt.Errorf("%s: max_batch_size %d: from 0 to at most %d", file, c.MaxBatchSize, maxBatchSize)
	}
	if d := c.DynamicBatching; d != nil {
		if d.MaxQueueDelayMicroseconds < 0 || d.MaxQueueDelayMicroseconds > int64(time.Hour/time.Microsecond) {
			return fmt.Errorf("%s: dynamic_batching.max_queue_delay_microseconds %d: from 0 to at most an hour", file, d.MaxQueueDelayMicroseconds)
		}
		if d.MaxQueueSize < 0 || d.MaxQueueSize > math.MaxInt32 {
			return fmt.Errorf("%s: dynamic_batching.max_queue_size %d: from 0 (no bound) to %d", file, d.MaxQueueSize, math.MaxInt32)
		}
	}
	if err := c.Batching().Check(); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// VersionPolicy selects the versions of a model that load, as Triton's
// model configuration does. Exactly one field may be set.
type VersionPolicy struct {
	Latest   *LatestPolicy
	Specific *SpecificPolicy
	All      *struct{}
}

// LatestPolicy loads the NumVersions highest versions.
type LatestPolicy struct {
	NumVersions int `json:"num_versions"`
}

// SpecificPolicy loads the listed versions.
type SpecificPolicy struct {
	Versions []int64 `json:"versions"`
}

// check checks the policy read from file.
func (p *VersionPolicy) check(file string) error {
	set := 0
	if p.Latest != nil {
		set++
		if p.Latest.NumVersions < 1 {
			return fmt.Errorf("%s: version_policy.latest.num_versions must be at least 1", file)
		}
	}
	if p.Specific != nil {
		set++
		if len(p.Specific.Versions) == 0 {
			return fmt.Errorf("%s: version_policy.specific.versions is empty", file)
		}
	}
	if p.All != nil {
		set++
	}
	if set != 1 {
		return fmt.Errorf("%s: version_policy takes exactly one of latest, specific or all", file)
	}
	return nil
}

// selectVersions returns the versions (of those on disk) the policy
// loads, ascending. A nil config or policy loads all.
func (c *Config) selectVersions(onDisk []int64) []int64 {
	v := slices.Clone(onDisk)
	slices.Sort(v)
	if c == nil || c.VersionPolicy == nil {
		return v
	}
	p := c.VersionPolicy
	switch {
	case p.Latest != nil:
		if len(v) > p.Latest.NumVersions {
			v = v[len(v)-p.Latest.NumVersions:]
		}
	case p.Specific != nil:
		v = slices.DeleteFunc(v, func(n int64) bool { return !slices.Contains(p.Specific.Versions, n) })
	}
	return v
}

// modelOptions applies the config's quantize keys to the server's
// defaults. A nil config keeps them.
func (c *Config) modelOptions(def model.Options) (model.Options, error) {
	if c == nil {
		return def, nil
	}
	opts := def
	switch c.Quantize {
	case "":
	case "int8":
		opts.Quantize = true
	case "none":
		opts.Quantize = false
	default:
		return opts, fmt.Errorf("config.yaml: quantize %q: int8 or none", c.Quantize)
	}
	if c.QuantizeScheme != "" {
		s, err := quant.ParseScheme(c.QuantizeScheme)
		if err != nil {
			return opts, fmt.Errorf("config.yaml: quantize_scheme: %w", err)
		}
		opts.Scheme = s
	}
	return opts, nil
}

// Platform is the Open Inference Protocol platform name of every model
// quantserve serves.
const Platform = "onnx_onnxv1"

// ParseConfig decodes and checks a config.yaml: Triton's ModelConfig
// fields as YAML (read as protobuf's JSON form, with the semantics of a
// config.pbtxt), and quantserve's own keys (default_version, quantize,
// quantize_scheme, parameters as plain strings, dynamic_batching's
// max_queue_size).
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{File: "config.yaml"}
	fail := func(err error) (*Config, error) { return nil, fmt.Errorf("config.yaml: %w", err) }
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fail(err)
	}
	take := func(key string, dst any) error {
		n, ok := doc[key]
		if !ok {
			return nil
		}
		delete(doc, key)
		return n.Decode(dst)
	}
	var maxBatch *int64
	var params map[string]any
	for key, dst := range map[string]any{"default_version": &c.DefaultVersion, "quantize": &c.Quantize, "quantize_scheme": &c.QuantizeScheme, "max_batch_size": &maxBatch, "parameters": &params} {
		if err := take(key, dst); err != nil {
			return fail(err)
		}
	}
	var queueSize *int64
	if n, ok := doc["dynamic_batching"]; ok && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "max_queue_size" {
				if err := n.Content[i+1].Decode(&queueSize); err != nil {
					return fail(err)
				}
				n.Content = slices.Delete(n.Content, i, i+2)
				doc["dynamic_batching"] = n
				break
			}
		}
	}
	generic := map[string]any{}
	for k, n := range doc {
		var v any
		if err := n.Decode(&v); err != nil {
			return fail(err)
		}
		generic[k] = v
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return fail(err)
	}
	var mc inference.ModelConfig
	if err := protojson.Unmarshal(js, &mc); err != nil {
		return fail(decodeError(err, false))
	}
	if err := c.fromModelConfig(&mc, ""); err != nil {
		return nil, err
	}
	if maxBatch != nil {
		c.MaxBatchSize = *maxBatch
	}
	if queueSize != nil {
		if c.DynamicBatching == nil {
			c.DynamicBatching = &DynamicBatching{}
		}
		c.DynamicBatching.MaxQueueSize = *queueSize
	}
	if params != nil {
		// quantserve's metadata, not a backend's settings: not warned about
		c.Ignored = slices.DeleteFunc(c.Ignored, func(s string) bool { return s == "parameters" })
		c.Parameters = map[string]string{}
		for k, v := range params {
			if m, ok := v.(map[string]any); ok && len(m) == 1 && m["string_value"] != nil {
				v = m["string_value"]
			}
			switch v.(type) {
			case nil:
				v = ""
			case map[string]any, []any:
				return fail(fmt.Errorf("parameters.%s: a string, or {string_value: ...}", k))
			}
			c.Parameters[k] = fmt.Sprint(v)
		}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.MaxBatchSize > 0 && c.MaxBatchSize <= math.MaxInt32 {
		mc.MaxBatchSize = int32(c.MaxBatchSize)
	}
	for k, v := range c.Parameters {
		if mc.Parameters == nil {
			mc.Parameters = map[string]*inference.ModelParameter{}
		}
		mc.Parameters[k] = &inference.ModelParameter{StringValue: v}
	}
	return c, nil
}

// check checks what a config's fields say together.
func (c *Config) check() error {
	if c.VersionPolicy != nil {
		if err := c.VersionPolicy.check(c.File); err != nil {
			return err
		}
	}
	if _, err := c.modelOptions(model.Options{}); err != nil {
		return err
	}
	if c.DefaultVersion < 0 {
		return fmt.Errorf("%s: default_version %d must be positive", c.File, c.DefaultVersion)
	}
	if err := c.checkBatching(c.File); err != nil {
		return err
	}
	if err := c.checkInstances(c.File); err != nil {
		return err
	}
	return c.checkWarmup()
}
