package repository

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/quantserve/quantserve/model"
	inference "github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

// TensorConfig is an input or output as a model's config declares it.
type TensorConfig struct {
	Name     string
	DataType tensor.DataType
	Dims     []int // without the batch dimension when MaxBatchSize > 0; -1 is any size
	// Reshape, when non-nil, is the shape the model sees (without the batch
	// dimension) where requests and answers have Dims; empty for a scalar.
	Reshape []int
}

// Triton's names of the ONNX platform and backend.
const (
	TritonPlatform = "onnxruntime_onnx"
	TritonBackend  = "onnxruntime"
)

// What a config field does here: read, accepted without changing
// answers (named in one warning at load), or refused with a reason.
type fieldRule struct {
	read   bool   // the field is read (its sub-fields are checked unless whole)
	whole  bool   // every sub-field is read as part of it
	ignore bool   // accepted, not applied: it does not change answers
	refuse string // why it is refused
}

// fieldRules names the fields of Triton's ModelConfig by their path; a
// set field with no rule is refused as not supported.
var fieldRules = map[string]fieldRule{
	"name": {read: true}, "platform": {read: true}, "backend": {read: true},
	"max_batch_size": {read: true}, "version_policy": {read: true, whole: true},
	"default_model_filename": {read: true},
	"input":                  {read: true}, "output": {read: true},
	"input.name": {read: true}, "input.data_type": {read: true}, "input.dims": {read: true}, "input.reshape": {read: true, whole: true},
	"output.name": {read: true}, "output.data_type": {read: true}, "output.dims": {read: true}, "output.reshape": {read: true, whole: true},
	"input.format":          {ignore: true},
	"output.label_filename": {ignore: true},
	"dynamic_batching":      {read: true},
	"dynamic_batching.max_queue_delay_microseconds":        {read: true},
	"dynamic_batching.preferred_batch_size":                {read: true},
	"dynamic_batching.default_queue_policy":                {read: true},
	"dynamic_batching.default_queue_policy.max_queue_size": {read: true},
	"dynamic_batching.preserve_ordering":                   {ignore: true},
	"instance_group":                                       {read: true}, "instance_group.name": {read: true}, "instance_group.kind": {read: true}, "instance_group.count": {read: true},
	"instance_group.gpus": {refuse: "quantserve runs models on the CPU"},
	"model_warmup":        {read: true, whole: true},
	"parameters":          {read: true, whole: true, ignore: true},
	"optimization":        {ignore: true}, "response_cache": {ignore: true}, "model_transaction_policy": {ignore: true},
	"model_metrics": {ignore: true}, "metric_tags": {ignore: true}, "model_operations": {ignore: true},
	"model_repository_agents": {ignore: true}, "cc_model_filenames": {ignore: true}, "runtime": {ignore: true},
	"sequence_batching":   {refuse: "sequence batching keeps state across a correlation ID's requests, which quantserve does not; every request is answered on its own"},
	"ensemble_scheduling": {refuse: "ensembles chain models through Triton's scheduler, which quantserve does not run; serve each model and chain them in the client"},
	"batch_input":         {refuse: "batch inputs are tensors Triton's batcher builds, which quantserve's does not"},
	"batch_output":        {refuse: "batch outputs are scattered by Triton's batcher, which quantserve's does not"},
}

// checkFields walks the set fields of m, refusing the ones quantserve
// neither reads nor can accept, and returns the paths of those it accepts
// without applying.
func checkFields(m protoreflect.Message, prefix string, ignored *[]string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := prefix + string(fd.Name())
		rule, ok := fieldRules[path]
		switch {
		case rule.refuse != "":
			err = fmt.Errorf("%s: %s", path, rule.refuse)
		case !ok:
			err = fmt.Errorf("%s is not supported by quantserve; remove it", path)
		case rule.ignore && !slices.Contains(*ignored, path):
			*ignored = append(*ignored, path)
		}
		if err != nil || !rule.read || rule.whole || fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
			return err == nil
		}
		if fd.IsList() {
			for i := range v.List().Len() {
				if err = checkFields(v.List().Get(i).Message(), path+".", ignored); err != nil {
					return false
				}
			}
			return true
		}
		err = checkFields(v.Message(), path+".", ignored)
		return err == nil
	})
	return err
}

// posPrefix matches the prefix the protobuf decoders give their errors.
var posPrefix = regexp.MustCompile(`^proto:[\s\x{00a0}]*(\(line (\d+:\d+)\):\s*)?`)

// jsonField matches a field named in the JSON decoder's errors.
var jsonField = regexp.MustCompile(`field [a-z][A-Za-z0-9]*`)

// fieldNames maps the JSON names of ModelConfig's fields to their names.
var fieldNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			fs := ms.Get(i).Fields()
			for j := range fs.Len() {
				names[fs.Get(j).JSONName()] = string(fs.Get(j).Name())
			}
			walk(ms.Get(i).Messages())
		}
	}
	walk(inference.File_model_config_proto.Messages())
	return names
})

// decodeError words a decoder's error, naming fields as config files do;
// keepLine keeps its position.
func decodeError(err error, keepLine bool) error {
	s := err.Error()
	if m := posPrefix.FindStringSubmatchIndex(s); m != nil {
		pos := ""
		if keepLine && m[4] >= 0 {
			pos = "line " + s[m[4]:m[5]] + ": "
		}
		s = pos + s[m[1]:]
	}
	s = jsonField.ReplaceAllStringFunc(s, func(f string) string {
		if n, ok := fieldNames()[f[len("field "):]]; ok {
			return "field " + n
		}
		return f
	})
	return errors.New(s)
}

// ParseTritonConfig reads a Triton config.pbtxt (protobuf text format, into
// Triton's ModelConfig message) and checks it: see fromModelConfig. A name
// must be dirName, the model's directory, unless dirName is "".
func ParseTritonConfig(data []byte, dirName string) (*Config, error) {
	var mc inference.ModelConfig
	if err := prototext.Unmarshal(data, &mc); err != nil {
		return nil, fmt.Errorf("config.pbtxt: %w", decodeError(err, true))
	}
	c := &Config{File: "config.pbtxt"}
	if err := c.fromModelConfig(&mc, dirName); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// OverrideFile names a config given with a load request, in errors.
const OverrideFile = "the load request's config"

// ParseConfigJSON reads a ModelConfig in protobuf's JSON form, as Triton's
// repository extension gives it with a load request ({"parameters":
// {"config": "..."}}), with the semantics of a config.pbtxt. A name must be
// name, unless name is "".
func ParseConfigJSON(data []byte, name string) (*Config, error) {
	var mc inference.ModelConfig
	if err := protojson.Unmarshal(data, &mc); err != nil {
		return nil, fmt.Errorf("%s: %w", OverrideFile, decodeError(err, false))
	}
	c := &Config{File: OverrideFile}
	if err := c.fromModelConfig(&mc, name); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// fromModelConfig reads Triton's ModelConfig into c: name, platform
// (onnxruntime_onnx), backend (onnxruntime), max_batch_size,
// dynamic_batching, instance_group (name, kind, count), version_policy,
// input and output (name, data_type, dims, reshape), default_model_filename,
// model_warmup and parameters (shown in the model's metadata). Fields that
// do not change answers (optimization, response_cache, ...) are accepted
// and listed in c.Ignored; fields that would (sequence_batching,
// ensemble_scheduling, ...) are refused with the reason.
func (c *Config) fromModelConfig(mc *inference.ModelConfig, dirName string) error {
	fail := func(err error) error { return fmt.Errorf("%s: %w", c.File, err) }
	c.Triton = mc
	if err := checkFields(mc.ProtoReflect(), "", &c.Ignored); err != nil {
		return fail(err)
	}
	sort.Strings(c.Ignored)
	if s := mc.GetName(); s != "" {
		if dirName != "" && s != dirName {
			return fail(fmt.Errorf("name %q differs from the model's directory %q", s, dirName))
		}
		if !ValidName(s) {
			return fail(fmt.Errorf("name %q is not a valid model name", s))
		}
		c.Name = s
	}
	if p := mc.GetPlatform(); p != "" {
		if p != TritonPlatform && p != Platform {
			return fail(fmt.Errorf("platform %q: quantserve serves ONNX models (%q)", p, TritonPlatform))
		}
		c.Platform = p
	}
	if b := mc.GetBackend(); b != "" && b != TritonBackend {
		return fail(fmt.Errorf("backend %q: quantserve serves ONNX models (%q)", b, TritonBackend))
	}
	if mc.GetMaxBatchSize() < 0 {
		return fail(fmt.Errorf("max_batch_size %d must not be negative", mc.GetMaxBatchSize()))
	}
	c.MaxBatchSize = int64(mc.GetMaxBatchSize())
	if s := mc.GetDefaultModelFilename(); s != "" {
		if s != filepath.Base(s) || s[0] == '.' || !strings.HasSuffix(s, ".onnx") {
			return fail(fmt.Errorf("default_model_filename %q must be a file name ending in .onnx", s))
		}
		c.ModelFile = s
	}
	if p := mc.GetVersionPolicy(); p != nil {
		c.VersionPolicy = &VersionPolicy{}
		switch {
		case p.GetLatest() != nil:
			c.VersionPolicy.Latest = &LatestPolicy{NumVersions: int(min(p.GetLatest().GetNumVersions(), 1<<20))}
		case p.GetSpecific() != nil:
			c.VersionPolicy.Specific = &SpecificPolicy{Versions: slices.Clone(p.GetSpecific().GetVersions())}
		case p.GetAll() != nil:
			c.VersionPolicy.All = &struct{}{}
		default:
			return fail(errors.New("version_policy takes one of latest, specific or all"))
		}
	}
	if d := mc.GetDynamicBatching(); d != nil {
		c.DynamicBatching = &DynamicBatching{
			MaxQueueDelayMicroseconds: int64(min(d.GetMaxQueueDelayMicroseconds(), 1<<62)),
			MaxQueueSize:              int64(d.GetDefaultQueuePolicy().GetMaxQueueSize()),
		}
		for _, p := range d.GetPreferredBatchSize() {
			c.DynamicBatching.PreferredBatchSize = append(c.DynamicBatching.PreferredBatchSize, int64(p))
		}
	}
	for _, g := range mc.GetInstanceGroup() {
		c.InstanceGroups = append(c.InstanceGroups, InstanceGroup{Name: g.GetName(), Kind: g.GetKind().String(), Count: int64(g.GetCount())})
	}
	for k, p := range mc.GetParameters() {
		if c.Parameters == nil {
			c.Parameters = map[string]string{}
		}
		c.Parameters[k] = p.GetStringValue()
	}
	if compileOnly(c.Parameters) { // parameters that set how the model compiles: applied
		c.Ignored = slices.DeleteFunc(c.Ignored, func(s string) bool { return s == "parameters" })
	}
	for _, in := range mc.GetInput() {
		t, err := tensorConfig("input", in.GetName(), in.GetDataType(), in.GetDims(), in.GetReshape())
		if err != nil {
			return fail(err)
		}
		c.Inputs = append(c.Inputs, t)
	}
	for _, out := range mc.GetOutput() {
		t, err := tensorConfig("output", out.GetName(), out.GetDataType(), out.GetDims(), out.GetReshape())
		if err != nil {
			return fail(err)
		}
		c.Outputs = append(c.Outputs, t)
	}
	for _, list := range [][]TensorConfig{c.Inputs, c.Outputs} {
		names := map[string]bool{}
		for _, t := range list {
			if names[t.Name] {
				return fail(fmt.Errorf("%q is declared twice", t.Name))
			}
			names[t.Name] = true
		}
	}
	for i, w := range mc.GetModelWarmup() {
		s, err := c.warmupSample(w)
		if err != nil {
			return fail(fmt.Errorf("model_warmup %d (%q): %w", i, w.GetName(), err))
		}
		c.Warmup = append(c.Warmup, s)
	}
	return nil
}

// dataType converts Triton's TYPE_* to the datatypes quantserve serves.
func dataType(dt inference.DataType) (tensor.DataType, error) {
	s, ok := strings.CutPrefix(dt.String(), "TYPE_")
	d, known := tensor.ParseDataType(s)
	if !ok || !known || d > tensor.Float64 {
		return 0, fmt.Errorf("data_type %s is not one quantserve serves (TYPE_BOOL, TYPE_UINT8-64, TYPE_INT8-64, TYPE_FP32, TYPE_FP64)", dt)
	}
	return d, nil
}

// maxDim bounds a declared dimension.
const maxDim = 1 << 40

func tensorConfig(kind, name string, dt inference.DataType, dims []int64, reshape *inference.ModelTensorReshape) (TensorConfig, error) {
	t := TensorConfig{Name: name}
	if name == "" {
		return t, fmt.Errorf("%s without a name", kind)
	}
	if dt == inference.DataType_TYPE_INVALID {
		return t, fmt.Errorf("%s %q without a data_type", kind, name)
	}
	d, err := dataType(dt)
	if err != nil {
		return t, fmt.Errorf("%s %q: %w", kind, name, err)
	}
	t.DataType = d
	if len(dims) == 0 && reshape == nil {
		return t, fmt.Errorf("%s %q without dims", kind, name)
	}
	conv := func(what string, ds []int64) ([]int, error) {
		out := make([]int, 0, len(ds))
		for _, n := range ds {
			if n < -1 || n > maxDim {
				return nil, fmt.Errorf("%s %q: %s value %d: a size, or -1 for a dynamic one", kind, name, what, n)
			}
			out = append(out, int(n))
		}
		return out, nil
	}
	if t.Dims, err = conv("dims", dims); err != nil {
		return t, err
	}
	if reshape != nil {
		if t.Reshape, err = conv("reshape", reshape.GetShape()); err != nil {
			return t, err
		}
		// the side reshaped to is inferred from the element count: at most one -1
		to := t.Reshape
		if kind == "output" {
			to = t.Dims
		}
		if count(to, -1) > 1 {
			return t, fmt.Errorf("%s %q: reshape from %v to %v: the shape reshaped to may have one dynamic (-1) dimension at most", kind, name, t.Dims, t.Reshape)
		}
	}
	return t, nil
}

func count(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// dimsMatch is Triton's CompareDimsSupported with compare_exact false: a
// dynamic (-1) dimension of the model accepts any declared one; a fixed
// one must equal it.
func dimsMatch(modelShape, declared []int) bool {
	if len(modelShape) != len(declared) {
		return false
	}
	for i, d := range modelShape {
		if d != -1 && d != declared[i] {
			return false
		}
	}
	return true
}

// checkModel checks a loaded model against the inputs, outputs and
// max_batch_size its config declares: every declared tensor exists with the
// same datatype and compatible dimensions (with max_batch_size > 0, the
// model's first dimension is the batch, dynamic, and the declared dims are
// the rest; with reshape, the reshaped dims are what the model sees), and
// a config that declares inputs declares them all.
func (c *Config) checkModel(m *model.Model) error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.MaxBatchSize > 0 {
		for _, sp := range slices.Concat(m.Inputs, m.Outputs) {
			if len(sp.Shape) == 0 || sp.Shape[0] != -1 {
				errs = append(errs, fmt.Errorf("max_batch_size %d needs a dynamic first (batch) dimension, but the model's %q has shape %v", c.MaxBatchSize, sp.Name, sp.Shape))
			}
		}
	}
	check := func(kind string, declared []TensorConfig, specs []model.IOSpec) {
		for _, t := range declared {
			i := slices.IndexFunc(specs, func(sp model.IOSpec) bool { return sp.Name == t.Name })
			if i < 0 {
				var names []string
				for _, sp := range specs {
					names = append(names, sp.Name)
				}
				errs = append(errs, fmt.Errorf("%s %q is not in the model (its %ss: %s)", kind, t.Name, kind, strings.Join(names, ", ")))
				continue
			}
			sp := specs[i]
			if sp.DType != t.DataType {
				errs = append(errs, fmt.Errorf("%s %q: data_type TYPE_%s, but the model's is TYPE_%s", kind, t.Name, t.DataType, sp.DType))
			}
			shape := sp.Shape
			if c.MaxBatchSize > 0 && len(shape) > 0 {
				shape = shape[1:]
			}
			dims, what := t.Dims, "dims"
			if t.Reshape != nil {
				dims, what = t.Reshape, "reshape"
			}
			if !dimsMatch(shape, dims) {
				of := "dims"
				if c.MaxBatchSize > 0 {
					of = "dims (after the batch dimension)"
				}
				errs = append(errs, fmt.Errorf("%s %q: %s %v, but the model's %s are %v (a dynamic -1 accepts any size; a fixed size must be equal)", kind, t.Name, what, dims, of, shape))
			}
		}
	}
	check("input", c.Inputs, m.Inputs)
	check("output", c.Outputs, m.Outputs)
	if len(c.Inputs) > 0 {
		for _, sp := range m.Inputs {
			if !slices.ContainsFunc(c.Inputs, func(t TensorConfig) bool { return t.Name == sp.Name }) {
				errs = append(errs, fmt.Errorf("the model's input %q is not declared (a config that declares inputs declares them all)", sp.Name))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s does not match the model: %w", c.File, errors.Join(errs...))
	}
	return nil
}

// CheckBatch refuses a request whose batch (the first dimension of any
// input) exceeds the model's max_batch_size. With dynamic batching on, the
// batcher runs such a request alone instead.
func (c *Config) CheckBatch(shapes [][]int) error {
	if c == nil || c.MaxBatchSize <= 0 || c.Batching().Enabled() {
		return nil
	}
	for _, s := range shapes {
		if len(s) > 0 && int64(s[0]) > c.MaxBatchSize {
			return fmt.Errorf("%w: batch of %d is larger than the model's max_batch_size of %d (%s)", model.ErrInput, s[0], c.MaxBatchSize, c.File)
		}
	}
	return nil
}

// Triton-style parameters of a model's config that set how it compiles,
// as Triton's onnxruntime backend takes its settings from parameters:
//
//	parameters { key: "quantize" value { string_value: "none" } }          # int8 or none
//	parameters { key: "quantize_exclude" value { string_value: "a,b" } }   # node names
//	parameters { key: "calibration" value { string_value: "static" } }     # static or dynamic
//
// quantize_exclude is ONNX Runtime's nodes_to_exclude: the products of
// the nodes named stay float32 (model.Options.QuantizeExclude);
// calibration static fixes the int8 layers' activation quantization from
// sample inputs at load (see CalibrationParameter).
const (
	QuantizeParameter        = "quantize"
	QuantizeExcludeParameter = "quantize_exclude"
)

// loadOptions returns the options a model with config c compiles with:
// the server's def, then config.yaml's quantize keys (modelOptions), then
// the parameters quantize and quantize_exclude. A nil config keeps def.
func (c *Config) loadOptions(def model.Options) (model.Options, error) {
	opts, err := c.modelOptions(def)
	if err != nil || c == nil {
		return opts, err
	}
	if q, ok := c.Parameters[QuantizeParameter]; ok {
		if c.Quantize != "" && c.Quantize != q {
			return opts, fmt.Errorf("%s: quantize %q and parameters.quantize %q disagree: give one", c.File, c.Quantize, q)
		}
		switch q {
		case "int8":
			opts.Quantize = true
		case "none":
			opts.Quantize = false
		default:
			return opts, fmt.Errorf("%s: parameters.quantize %q: int8 or none", c.File, q)
		}
	}
	if _, err := c.staticCalibration(); err != nil {
		return opts, err
	}
	if x, ok := c.Parameters[QuantizeExcludeParameter]; ok {
		opts.QuantizeExclude = nil
		for name := range strings.SplitSeq(x, ",") {
			if name = strings.TrimSpace(name); name == "" {
				return opts, fmt.Errorf("%s: parameters.quantize_exclude %q: node names separated by commas, none empty", c.File, x)
			}
			opts.QuantizeExclude = append(opts.QuantizeExclude, name)
		}
	}
	return opts, nil
}

// compileOnly reports whether params, not empty, holds only parameters
// that set how the model compiles.
func compileOnly(params map[string]string) bool {
	for k := range params {
		if k != QuantizeParameter && k != QuantizeExcludeParameter && k != CalibrationParameter {
			return false
		}
	}
	return len(params) > 0
}
