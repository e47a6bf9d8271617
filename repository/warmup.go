package repository

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/quantserve/quantserve/model"
	inference "github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

// WarmupSample is an entry of model_warmup: a request run Count times at
// load, before the version serves, as Triton warms a model up.
type WarmupSample struct {
	Name      string
	BatchSize int // rows, with max_batch_size > 0 (1 when not given)
	Count     int // executions (1 when not given)
	Inputs    []WarmupInput
}

// WarmupInput is one input of a warm-up sample: zeros, random bytes, or
// the raw little-endian contents of a file in the model's warmup
// directory, for one row (repeated for each row of the batch).
type WarmupInput struct {
	Name     string
	DataType tensor.DataType
	Dims     []int // without the batch dimension
	Data     string
	File     string // with Data "file": its name under <model>/warmup
}

// How a warm-up input is filled.
const (
	WarmupZero   = "zero"
	WarmupRandom = "random"
	WarmupFile   = "file"
)

// maxWarmupCount bounds a sample's executions.
const maxWarmupCount = 1 << 16

func (c *Config) warmupSample(w *inference.ModelWarmup) (WarmupSample, error) {
	s := WarmupSample{Name: w.GetName(), BatchSize: int(max(w.GetBatchSize(), 1)), Count: int(min(max(w.GetCount(), 1), maxWarmupCount+1))}
	if len(w.GetInputs()) == 0 {
		return s, fmt.Errorf("no inputs")
	}
	for name, in := range w.GetInputs() {
		d, err := dataType(in.GetDataType())
		if err != nil {
			return s, fmt.Errorf("input %q: %w", name, err)
		}
		wi := WarmupInput{Name: name, DataType: d}
		for _, n := range in.GetDims() {
			if n < 0 || n > maxDim {
				return s, fmt.Errorf("input %q: dims value %d: warm-up dims are sizes", name, n)
			}
			wi.Dims = append(wi.Dims, int(n))
		}
		switch v := in.GetInputDataType().(type) {
		case *inference.ModelWarmup_Input_ZeroData:
			wi.Data = WarmupZero
		case *inference.ModelWarmup_Input_RandomData:
			wi.Data = WarmupRandom
		case *inference.ModelWarmup_Input_InputDataFile:
			if !filepath.IsLocal(v.InputDataFile) || strings.HasPrefix(v.InputDataFile, ".") {
				return s, fmt.Errorf("input %q: input_data_file %q: a file in the model's warmup directory", name, v.InputDataFile)
			}
			wi.Data, wi.File = WarmupFile, v.InputDataFile
		default:
			return s, fmt.Errorf("input %q: give zero_data, random_data or input_data_file", name)
		}
		s.Inputs = append(s.Inputs, wi)
	}
	sort.Slice(s.Inputs, func(i, j int) bool { return s.Inputs[i].Name < s.Inputs[j].Name })
	return s, nil
}

// checkWarmup checks the warm-up samples against max_batch_size.
func (c *Config) checkWarmup() error {
	for i, s := range c.Warmup {
		if s.Count > maxWarmupCount {
			return fmt.Errorf("%s: model_warmup %d (%q): count: at most %d", c.File, i, s.Name, maxWarmupCount)
		}
		if s.BatchSize > max(int(c.MaxBatchSize), 1) {
			return fmt.Errorf("%s: model_warmup %d (%q): batch_size %d, but the model's max_batch_size is %d (1 for a model without a batch dimension)", c.File, i, s.Name, s.BatchSize, c.MaxBatchSize)
		}
		for _, in := range s.Inputs {
			if _, err := tensor.NumElements(append([]int{s.BatchSize}, in.Dims...)); err != nil {
				return fmt.Errorf("%s: model_warmup %d (%q): input %q: %w", c.File, i, s.Name, in.Name, err)
			}
		}
	}
	return nil
}

// warmupInputs builds a sample's inputs; dir is the model's directory,
// whose warmup subdirectory holds the input files.
func (c *Config) warmupInputs(s WarmupSample, dir string) (map[string]*tensor.Tensor, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := map[string]*tensor.Tensor{}
	for _, in := range s.Inputs {
		shape := in.Dims
		if c.MaxBatchSize > 0 {
			shape = append([]int{s.BatchSize}, in.Dims...)
		}
		row, err := tensor.NumElements(in.Dims)
		if err != nil {
			return nil, err
		}
		raw := make([]byte, row*in.DataType.Size())
		switch in.Data {
		case WarmupRandom:
			for i := range raw {
				raw[i] = byte(rng.Uint32())
			}
		case WarmupFile:
			if dir == "" {
				return nil, fmt.Errorf("input %q: input_data_file needs the model's directory", in.Name)
			}
			data, err := readRegular(filepath.Join(dir, "warmup", in.File))
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in.Name, err)
			}
			if len(data) != len(raw) {
				return nil, fmt.Errorf("input %q: %s holds %d bytes, but dims %v of TYPE_%s take %d", in.Name, in.File, len(data), in.Dims, in.DataType, len(raw))
			}
			raw = data
		}
		rows := 1
		if c.MaxBatchSize > 0 {
			rows = s.BatchSize
		}
		all := make([]byte, 0, rows*len(raw))
		for range rows {
			all = append(all, raw...)
		}
		inputs[in.Name] = &tensor.Tensor{DType: in.DataType, Shape: slices.Clone(shape), Data: tensor.FromLittleEndian(in.DataType, all, rows*row)}
	}
	return inputs, nil
}

// modelDir returns the directory of a model's files, "" for a model given
// as bytes.
func (r *Repository) modelDir(name string) string {
	switch {
	case r.single != nil:
		return r.single.dir
	case r.root == "":
		return ""
	}
	return filepath.Join(r.root, name)
}

// warmUp runs the config's warm-up samples on a version, each Count
// times, before it serves; an error fails the version's load.
func (v *Version) warmUp(ctx context.Context, c *Config, dir string) error {
	if c == nil {
		return nil
	}
	for i, s := range c.Warmup {
		inputs, err := c.warmupInputs(s, dir)
		if err != nil {
			return fmt.Errorf("%s: model_warmup %d (%q): %w", c.File, i, s.Name, err)
		}
		for range s.Count {
			if _, err := v.runModel(ctx, inputs, nil, v.Model.Run); err != nil {
				return fmt.Errorf("%s: model_warmup %d (%q) failed: %w", c.File, i, s.Name, err)
			}
		}
	}
	return nil
}

// runModel runs run (the model, or the version's batcher or instances) on
// inputs shaped as the config declares them: each declared input's shape
// must match its dims (a -1 accepts any size) and is reshaped to what the
// model sees; declared outputs with reshape are reshaped back.
func (v *Version) runModel(ctx context.Context, inputs map[string]*tensor.Tensor, outputs []string, run func(context.Context, map[string]*tensor.Tensor, []string) (map[string]*tensor.Tensor, error)) (map[string]*tensor.Tensor, error) {
	c := v.config
	if c == nil || len(c.Inputs) == 0 && len(c.Outputs) == 0 {
		return run(ctx, inputs, outputs)
	}
	batch := 0
	if c.MaxBatchSize > 0 {
		batch = 1
	}
	var in map[string]*tensor.Tensor
	for _, t := range c.Inputs {
		x := inputs[t.Name]
		if x == nil {
			continue // the model names what is missing
		}
		if len(x.Shape) != batch+len(t.Dims) || !dimsMatch(t.Dims, x.Shape[batch:]) {
			after := ""
			if batch == 1 {
				after = " after the batch dimension"
			}
			return nil, fmt.Errorf("%w: input %q has shape %v, but %s declares dims %v%s", model.ErrInput, t.Name, x.Shape, c.File, t.Dims, after)
		}
		if t.Reshape == nil {
			continue
		}
		r, err := reshapeTo(x, batch, t.Reshape)
		if err != nil {
			return nil, fmt.Errorf("%w: input %q: %v", model.ErrInput, t.Name, err)
		}
		if in == nil {
			in = make(map[string]*tensor.Tensor, len(inputs))
			for k, x := range inputs {
				in[k] = x
			}
		}
		in[t.Name] = r
	}
	if in == nil {
		in = inputs
	}
	out, err := run(ctx, in, outputs)
	if err != nil {
		return nil, err
	}
	for _, t := range c.Outputs {
		if y := out[t.Name]; y != nil && t.Reshape != nil {
			if out[t.Name], err = reshapeTo(y, min(batch, len(y.Shape)), t.Dims); err != nil {
				return nil, fmt.Errorf("output %q: %w", t.Name, err)
			}
		}
	}
	return out, nil
}

// reshapeTo reshapes x, keeping its first batch dimensions, to shape (at
// most one -1, inferred from the element count).
func reshapeTo(x *tensor.Tensor, batch int, shape []int) (*tensor.Tensor, error) {
	to := append(slices.Clone(x.Shape[:batch]), shape...)
	if i := slices.Index(to, -1); i >= 0 {
		to[i] = 1
		n, err := tensor.NumElements(to)
		if err != nil {
			return nil, err
		}
		if n == 0 || x.Len()%n != 0 {
			return nil, fmt.Errorf("cannot reshape %v to %v", x.Shape, append(slices.Clone(x.Shape[:batch]), shape...))
		}
		to[i] = x.Len() / n
	}
	return x.Reshaped(to)
}
