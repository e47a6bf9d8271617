package repository

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Static calibration: a config asks for it with a parameter,
//
//	parameters { key: "calibration" value { string_value: "static" } }   # or dynamic (the default)
//
// and the version directory holds sample inputs in the ONNX test-set
// layout, <model>/<version>/test_data_set_N/input_K.pb (TensorProto
// files; input K is the model's K-th input, or the input the tensor
// names). At load the model compiles with its int8 layers measuring the
// range of the activations they quantize, runs on every set under the
// load's deadline and a memory budget, and compiles again with those
// ranges fixed (model.Static): each int8 layer's activations quantize
// with per-tensor parameters, values outside the calibrated range
// clamping, as ONNX Runtime's static QDQ models run. Layers the samples
// never reached stay per row. Whatever fails (no samples, an unreadable
// file, a run that fails) fails the load with the reason.
const (
	CalibrationParameter = "calibration"
	CalibrationDynamic   = "dynamic"
	CalibrationStatic    = "static"
)

// Bounds of a calibration: the sample sets read, the bytes of one sample
// file, and the memory one calibration run may hold for its values.
const (
	maxCalibrationSets      = 256
	maxCalibrationFileBytes = 1 << 28
	calibrationBudgetBytes  = 1 << 30
)

// staticCalibration reports whether c asks for static calibration.
func (c *Config) staticCalibration() (bool, error) {
	if c == nil {
		return false, nil
	}
	v, ok := c.Parameters[CalibrationParameter]
	switch {
	case !ok || v == CalibrationDynamic:
		return false, nil
	case v == CalibrationStatic:
		return true, nil
	}
	return false, fmt.Errorf("%s: parameters.%s %q: %s or %s", c.File, CalibrationParameter, v, CalibrationStatic, CalibrationDynamic)
}

// calibrationSummary is what a calibration found, for the load log.
type calibrationSummary struct {
	sets int
	int8 int // int8 layers
	took time.Duration
}

// calibrate returns opts with a static calibration when the config asks
// for one: the samples are read from dir (the version's directory), and
// the model (data) runs on them compiled with opts, measuring. It returns opts unchanged and a nil summary when
// the config does not ask.
func calibrate(ctx context.Context, dir string, data []byte, opts model.Options, cfg *Config) (model.Options, *calibrationSummary, error) {
	static, err := cfg.staticCalibration()
	if err != nil || !static {
		return opts, nil, err
	}
	start := time.Now()
	fail := func(err error) (model.Options, *calibrationSummary, error) {
		return opts, nil, fmt.Errorf("%s: calibration %s: %w", cfg.File, CalibrationStatic, err)
	}
	if !opts.Quantize {
		return fail(errors.New("the model runs in float32 (quantize none): there are no int8 layers to calibrate"))
	}
	if dir == "" {
		return fail(errors.New("the model has no directory to hold test_data_set_* samples"))
	}
	sets, err := calibrationSets(dir)
	if err != nil {
		return fail(err)
	}
	measure := opts
	measure.Calibration = model.Measure()
	m, err := model.LoadContext(ctx, data, measure)
	if err != nil {
		return fail(err)
	}
	probe := &Version{Model: m, config: cfg}
	budget := &calibrationBudget{limit: calibrationBudgetBytes}
	for _, set := range sets {
		inputs, err := readSamples(set, m)
		if err != nil {
			return fail(err)
		}
		if _, err := probe.runModel(model.WithBudget(ctx, budget), inputs, nil, m.Run); err != nil {
			return fail(fmt.Errorf("%s: %w", filepath.Base(set), err))
		}
	}
	cal, err := model.Static(measure.Calibration.Ranges())
	if err != nil {
		return fail(err)
	}
	opts.Calibration = cal
	return opts, &calibrationSummary{sets: len(sets), int8: model.Int8Layers(m.Layers), took: time.Since(start)}, nil
}

// calibrationSets returns dir's test_data_set_N directories in the order
// of N.
func calibrationSets(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type set struct {
		n    int
		path string
	}
	var sets []set
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "test_data_set_")
		n, err := strconv.Atoi(rest)
		if !ok || err != nil || n < 0 || strconv.Itoa(n) != rest || !isDir(dir, e) {
			continue
		}
		sets = append(sets, set{n, filepath.Join(dir, e.Name())})
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("%s holds no test_data_set_N directories of sample inputs", dir)
	}
	if len(sets) > maxCalibrationSets {
		return nil, fmt.Errorf("%s holds %d sample sets: at most %d", dir, len(sets), maxCalibrationSets)
	}
	slices.SortFunc(sets, func(a, b set) int { return a.n - b.n })
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.path
	}
	return out, nil
}

// readSamples reads the inputs of one test set: input_K.pb for the
// model's input K, or for the input the tensor names.
func readSamples(dir string, m *model.Model) (map[string]*tensor.Tensor, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	inputs := map[string]*tensor.Tensor{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "input_")
		if !ok || !strings.HasSuffix(rest, ".pb") {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSuffix(rest, ".pb"))
		if err != nil || k < 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if st, err := os.Stat(path); err != nil {
			return nil, err
		} else if st.Size() > maxCalibrationFileBytes {
			return nil, fmt.Errorf("%s: %d bytes, a sample file holds at most %d", path, st.Size(), maxCalibrationFileBytes)
		}
		raw, err := readRegular(path)
		if err != nil {
			return nil, err
		}
		p, err := onnxpb.UnmarshalTensor(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		x, err := model.TensorFromONNX(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		name := p.Name
		if !slices.ContainsFunc(m.Inputs, func(s model.IOSpec) bool { return s.Name == name }) {
			if k >= len(m.Inputs) {
				return nil, fmt.Errorf("%s: the model has %d inputs", path, len(m.Inputs))
			}
			name = m.Inputs[k].Name
		}
		if inputs[name] != nil {
			return nil, fmt.Errorf("%s: a second tensor for input %q", path, name)
		}
		inputs[name] = x
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%s holds no input_K.pb files", dir)
	}
	return inputs, nil
}

// calibrationBudget bounds the memory a calibration run holds for its
// values (model.Budget).
type calibrationBudget struct {
	mu          sync.Mutex
	used, limit int64
}

func (b *calibrationBudget) Grow(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return fmt.Errorf("a calibration run holds at most %d bytes of values", b.limit)
	}
	b.used += n
	return nil
}

func (b *calibrationBudget) Shrink(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= min(n, b.used)
}

// versionDir returns the directory of a version's files, "" for a model
// given as bytes.
func (r *Repository) versionDir(name string, number int64) string {
	dir := r.modelDir(name)
	if dir == "" || r.single != nil {
		return dir
	}
	return filepath.Join(dir, strconv.FormatInt(number, 10))
}

// staticLayers counts the layers whose activations quantize with
// calibrated parameters.
func staticLayers(layers []model.Layer) int {
	n := 0
	for _, l := range layers {
		if l.Int8() && strings.Contains(l.Kernels, "(static activations)") {
			n++
		}
	}
	return n
}
