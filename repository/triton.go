package repository

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// TensorConfig is an input or output as a Triton config.pbtxt declares it.
type TensorConfig struct {
	Name     string
	DataType tensor.DataType
	Dims     []int // without the batch dimension when MaxBatchSize > 0
}

// tritonFields are the config.pbtxt fields quantserve reads; any other
// field is an error naming it, so a setting is never silently ignored.
var tritonFields = []string{"name", "platform", "backend", "max_batch_size", "dynamic_batching", "instance_group", "version_policy", "input", "output", "default_model_filename"}

// Triton's names of the ONNX platform and backend.
const (
	TritonPlatform = "onnxruntime_onnx"
	TritonBackend  = "onnxruntime"
)

// ParseTritonConfig reads a Triton config.pbtxt (protobuf text format):
// name, platform (onnxruntime_onnx), backend (onnxruntime), max_batch_size,
// dynamic_batching, instance_group (name, kind, count), version_policy,
// input and output (name, data_type, dims) and default_model_filename. Any other field is an error naming it. A name
// must be dirName, the model's directory, unless dirName is "".
func ParseTritonConfig(data []byte, dirName string) (*Config, error) {
	fail := func(err error) (*Config, error) { return nil, fmt.Errorf("config.pbtxt: %w", err) }
	fields, err := parsePbtxt(string(data))
	if err != nil {
		return fail(err)
	}
	c := &Config{File: "config.pbtxt"}
	seen := map[string]int{}
	for _, f := range fields {
		if !slices.Contains(tritonFields, f.Name) {
			return fail(fmt.Errorf("line %d: field %q is not supported by quantserve (it reads %s); remove it", f.Line, f.Name, strings.Join(tritonFields, ", ")))
		}
		seen[f.Name]++
		if f.Name != "input" && f.Name != "output" && f.Name != "instance_group" && seen[f.Name] > 1 {
			return fail(fmt.Errorf("line %d: %s is given twice", f.Line, f.Name))
		}
		switch f.Name {
		case "name":
			s, err := pbStr(f)
			if err != nil {
				return fail(err)
			}
			if dirName != "" && s != dirName {
				return fail(fmt.Errorf("line %d: name %q differs from the model's directory %q", f.Line, s, dirName))
			}
			if !ValidName(s) {
				return fail(fmt.Errorf("line %d: name %q is not a valid model name", f.Line, s))
			}
			c.Name = s
		case "platform":
			if c.Platform, err = pbStr(f); err != nil {
				return fail(err)
			}
			if c.Platform != TritonPlatform && c.Platform != Platform {
				return fail(fmt.Errorf("line %d: platform %q: quantserve serves ONNX models (%q)", f.Line, c.Platform, TritonPlatform))
			}
		case "backend":
			s, err := pbStr(f)
			if err != nil {
				return fail(err)
			}
			if s != TritonBackend {
				return fail(fmt.Errorf("line %d: backend %q: quantserve serves ONNX models (%q)", f.Line, s, TritonBackend))
			}
		case "max_batch_size":
			n, err := pbInt(f)
			if err != nil {
				return fail(err)
			}
			if n < 0 {
				return fail(fmt.Errorf("line %d: max_batch_size %d must not be negative", f.Line, n))
			}
			c.MaxBatchSize = n
		case "default_model_filename":
			s, err := pbStr(f)
			if err != nil {
				return fail(err)
			}
			if s == "" || s != filepath.Base(s) || s[0] == '.' || !strings.HasSuffix(s, ".onnx") {
				return fail(fmt.Errorf("line %d: default_model_filename %q must be a file name ending in .onnx", f.Line, s))
			}
			c.ModelFile = s
		case "version_policy":
			if c.VersionPolicy, err = pbVersionPolicy(f); err != nil {
				return fail(err)
			}
		case "dynamic_batching":
			if c.DynamicBatching, err = pbDynamicBatching(f); err != nil {
				return fail(err)
			}
		case "instance_group":
			g, err := pbInstanceGroup(f)
			if err != nil {
				return fail(err)
			}
			c.InstanceGroups = append(c.InstanceGroups, g)
		case "input", "output":
			t, err := pbTensor(f)
			if err != nil {
				return fail(err)
			}
			if f.Name == "input" {
				c.Inputs = append(c.Inputs, t)
			} else {
				c.Outputs = append(c.Outputs, t)
			}
		}
	}
	if c.VersionPolicy != nil {
		if err := c.VersionPolicy.check(c.File); err != nil {
			return nil, err
		}
	}
	if err := c.checkBatching(c.File); err != nil {
		return nil, err
	}
	if err := c.checkInstances(c.File); err != nil {
		return nil, err
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
	return c, nil
}

func pbStr(f *pbField) (string, error) {
	if f.Value == nil || f.Value.Kind != pbStrKind {
		return "", fmt.Errorf("line %d: %s must be a quoted string", f.Line, f.Name)
	}
	return f.Value.Text, nil
}

func pbInt(f *pbField) (int64, error) {
	if f.Value == nil || f.Value.Kind != pbNumber {
		return 0, fmt.Errorf("line %d: %s must be an integer", f.Line, f.Name)
	}
	n, err := strconv.ParseInt(f.Value.Text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s: %q is not an integer", f.Line, f.Name, f.Value.Text)
	}
	return n, nil
}

// pbOnly checks that a message has only the named fields.
func pbOnly(f *pbField, names ...string) error {
	if f.Msg == nil && f.Value != nil {
		return fmt.Errorf("line %d: %s must be a message ({...})", f.Line, f.Name)
	}
	for _, sub := range f.Msg {
		if !slices.Contains(names, sub.Name) {
			known := "no fields"
			if len(names) > 0 {
				known = strings.Join(names, ", ")
			}
			return fmt.Errorf("line %d: %s.%s is not supported by quantserve (%s takes %s)", sub.Line, f.Name, sub.Name, f.Name, known)
		}
	}
	return nil
}

func pbVersionPolicy(f *pbField) (*VersionPolicy, error) {
	if err := pbOnly(f, "latest", "all", "specific"); err != nil {
		return nil, err
	}
	p := &VersionPolicy{}
	for _, sub := range f.Msg {
		switch sub.Name {
		case "latest":
			if err := pbOnly(sub, "num_versions"); err != nil {
				return nil, err
			}
			p.Latest = &LatestPolicy{}
			for _, n := range sub.Msg {
				v, err := pbInt(n)
				if err != nil {
					return nil, err
				}
				p.Latest.NumVersions = int(min(max(v, 0), 1<<20))
			}
		case "all":
			if err := pbOnly(sub); err != nil {
				return nil, err
			}
			p.All = &struct{}{}
		case "specific":
			if err := pbOnly(sub, "versions"); err != nil {
				return nil, err
			}
			p.Specific = &SpecificPolicy{}
			for _, n := range sub.Msg {
				v, err := pbInt(n)
				if err != nil {
					return nil, err
				}
				p.Specific.Versions = append(p.Specific.Versions, v)
			}
		}
	}
	return p, nil
}

func pbTensor(f *pbField) (TensorConfig, error) {
	var t TensorConfig
	if err := pbOnly(f, "name", "data_type", "dims"); err != nil {
		return t, err
	}
	hasType := false
	for _, sub := range f.Msg {
		switch sub.Name {
		case "name":
			s, err := pbStr(sub)
			if err != nil {
				return t, err
			}
			t.Name = s
		case "data_type":
			if sub.Value == nil || sub.Value.Kind != pbIdent {
				return t, fmt.Errorf("line %d: data_type must be a TYPE_* name", sub.Line)
			}
			dt, ok := strings.CutPrefix(sub.Value.Text, "TYPE_")
			d, known := tensor.ParseDataType(dt)
			if !ok || !known || d > tensor.Float64 {
				return t, fmt.Errorf("line %d: data_type %s is not one quantserve serves (TYPE_BOOL, TYPE_UINT8-64, TYPE_INT8-64, TYPE_FP32, TYPE_FP64)", sub.Line, sub.Value.Text)
			}
			t.DataType, hasType = d, true
		case "dims":
			n, err := pbInt(sub)
			if err != nil {
				return t, err
			}
			if n < -1 || n > 1<<40 {
				return t, fmt.Errorf("line %d: dims value %d: a size, or -1 for a dynamic one", sub.Line, n)
			}
			t.Dims = append(t.Dims, int(n))
		}
	}
	if t.Name == "" {
		return t, fmt.Errorf("line %d: %s without a name", f.Line, f.Name)
	}
	if !hasType {
		return t, fmt.Errorf("line %d: %s %q without a data_type", f.Line, f.Name, t.Name)
	}
	if t.Dims == nil {
		return t, fmt.Errorf("line %d: %s %q without dims", f.Line, f.Name, t.Name)
	}
	return t, nil
}

// checkModel checks a loaded model against the inputs, outputs and
// max_batch_size its config declares: every declared tensor exists with the
// same datatype and dimensions (with max_batch_size > 0, the model's first
// dimension is the batch, dynamic, and the declared dims are the rest), and
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
			if !slices.Equal(shape, t.Dims) {
				what := "dims"
				if c.MaxBatchSize > 0 {
					what = "dims (after the batch dimension)"
				}
				errs = append(errs, fmt.Errorf("%s %q: dims %v, but the model's %s are %v", kind, t.Name, t.Dims, what, shape))
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
