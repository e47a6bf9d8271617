package repository

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// textDetector is a config.pbtxt as a team moving from Triton writes one
// for a text detector exported with dynamic height and width ([3 -1 -1]
// after the batch dimension), served at a fixed 48x192.
const textDetector = `
name: "det"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { latest { num_versions: 1 } }
input [
  {
    name: "x"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 48, 192 ]
  }
]
output [
  {
    name: "y"
    data_type: TYPE_FP32
    dims: [ 3, 48, 192 ]
  }
]
instance_group [ { count: 2, kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
}
parameters { key: "intra_op_thread_count" value: { string_value: "4" } }
optimization {
  execution_accelerators {
    cpu_execution_accelerator : [ { name : "openvino" } ]
  }
}
response_cache { enable: true }
model_warmup [
  {
    name: "zeros"
    batch_size: 8
    count: 3
    inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3, 48, 192 ] zero_data: true } }
  },
  {
    name: "noise"
    batch_size: 1
    inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3, 48, 192 ] random_data: true } }
  }
]
`

func TestTritonConfigAsWritten(t *testing.T) {
	onnx := onnxbuild.Identity(tensor.Float32, []int{-1, 3, -1, -1})
	dir := writeFiles(t, map[string][]byte{"det/config.pbtxt": []byte(textDetector), "det/1/model.onnx": onnx, "det/2/model.onnx": onnx})
	var log lockedBuffer
	r, err := Open(dir, Options{Log: timelessLog(&log)})
	if err != nil {
		t.Fatal(err)
	}
	e, v, release, err := r.Get("det", "")
	if err != nil {
		t.Fatalf("%v (%s)", err, r.NotReady())
	}
	defer release()
	if v.Number != 2 || e.VersionList() != "2" || v.Batcher == nil || v.Batcher.Config().Instances != 2 || v.Batcher.Config().MaxBatchSize != 8 {
		t.Errorf("version %d of %s, batcher %+v", v.Number, e.VersionList(), v.Batcher)
	}
	if e.Config.Parameters["intra_op_thread_count"] != "4" || len(e.Config.Warmup) != 2 || e.Config.Warmup[0].Count != 3 || e.Config.Warmup[1].BatchSize != 1 {
		t.Errorf("config %+v", e.Config)
	}
	warn := log.lines("config fields accepted but not applied")
	if len(warn) != 1 || !strings.Contains(warn[0], `fields="input.format, optimization, parameters, response_cache"`) {
		t.Errorf("want one warning naming the fields not applied: %q", warn)
	}

	// the declared dims bound requests; the answer is the model's
	x := tensor.From([]int{2, 3, 48, 192}, make([]float32, 2*3*48*192))
	for i := range x.Data.([]float32) {
		x.Data.([]float32)[i] = float32(i%251) / 7
	}
	out, err := v.Run(context.Background(), map[string]*tensor.Tensor{"x": x}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out["y"].Shape, x.Shape) || !slices.Equal(out["y"].Data.([]float32), x.Data.([]float32)) {
		t.Errorf("identity answered %v", out["y"].Shape)
	}
	other := tensor.From([]int{1, 3, 50, 50}, make([]float32, 3*50*50))
	if _, err := v.Run(context.Background(), map[string]*tensor.Tensor{"x": other}, nil); !errors.Is(err, model.ErrInput) || !strings.Contains(err.Error(), "declares dims [3 48 192]") {
		t.Errorf("a 50x50 image: %v, want an input error naming the declared dims", err)
	}
}

func TestTritonDimsMatching(t *testing.T) {
	// Triton's CompareDimsSupported (compare_exact false)
	for _, c := range []struct {
		model, declared []int
		ok              bool
	}{
		{[]int{3, -1, -1}, []int{3, 48, 192}, true},
		{[]int{3, -1, -1}, []int{3, -1, -1}, true},
		{[]int{3, -1, -1}, []int{3, -1, 192}, true},
		{[]int{3, -1, -1}, []int{4, 48, 192}, false},
		{[]int{3, 48, 192}, []int{3, -1, 192}, false},
		{[]int{3, -1, -1}, []int{3, 48}, false},
		{[]int{}, []int{}, true},
	} {
		if got := dimsMatch(c.model, c.declared); got != c.ok {
			t.Errorf("model %v, declared %v: %v, want %v", c.model, c.declared, got, c.ok)
		}
	}
	// without a batch dimension, and the error for a fixed dimension that differs
	dir := writeFiles(t, map[string][]byte{
		"a/config.pbtxt": []byte(`backend: "onnxruntime" input [{name: "x", data_type: TYPE_FP32, dims: [3, 48, 192]}]`),
		"a/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{3, -1, -1}),
		"b/config.pbtxt": []byte(`input [{name: "x", data_type: TYPE_FP32, dims: [4, 48, 192]}]`),
		"b/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{3, -1, -1}),
		"c/config.pbtxt": []byte(`platform: "tensorflow_savedmodel"`),
		"c/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{3}),
		"d/config.pbtxt": []byte(`sequence_batching { }`),
		"d/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{3}),
		"e/config.pbtxt": []byte(`backend: "tensorrt"`),
		"e/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{3}),
	})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": "",
		"b": `input "x": dims [4 48 192], but the model's dims are [3 -1 -1]`,
		"c": `platform "tensorflow_savedmodel": quantserve serves ONNX models`,
		"d": "sequence_batching: sequence batching keeps state",
		"e": `backend "tensorrt"`,
	}
	for _, e := range r.Entries() {
		switch w := want[e.Name]; {
		case w == "" && !e.Ready():
			t.Errorf("%s: %v", e.Name, e.Err)
		case w != "" && (e.Err == nil || !strings.Contains(e.Err.Error(), w)):
			t.Errorf("%s: %v, want an error mentioning %q", e.Name, e.Err, w)
		}
	}
}

func TestTritonReshape(t *testing.T) {
	// the model takes rows of 12; clients send and receive 3x4
	dir := writeFiles(t, map[string][]byte{
		"r/config.pbtxt": []byte(`
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 4 ] reshape: { shape: [ 12 ] } } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 3, 4 ] reshape: { shape: [ 12 ] } } ]
model_warmup [ { name: "w" batch_size: 4 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3, 4 ] zero_data: true } } } ]
`),
		"r/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{-1, 12}),
		"bad/config.pbtxt": []byte(`max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 12 ] reshape: { shape: [ 3, 4 ] } } ]`),
		"bad/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{-1, 12}),
	})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, v, release, err := r.Get("r", "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	data := make([]float32, 2*12)
	for i := range data {
		data[i] = float32(i) - 5.5
	}
	out, err := v.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 4}, data)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out["y"].Shape, []int{2, 3, 4}) || !slices.Equal(out["y"].Data.([]float32), data) {
		t.Errorf("reshaped answer %v %v", out["y"].Shape, out["y"].Data)
	}
	if _, err := v.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{2, 12}, data)}, nil); !errors.Is(err, model.ErrInput) {
		t.Errorf("a request in the model's shape, not the config's: %v", err)
	}
	_, _, _, err = r.Get("bad", "")
	if err == nil || !strings.Contains(err.Error(), `reshape [3 4], but the model's dims (after the batch dimension) are [12]`) {
		t.Errorf("a reshape the model does not take: %v", err)
	}
}

func TestWarmup(t *testing.T) {
	raw := new(bytes.Buffer)
	for _, f := range []float32{1.5, -2, 3} {
		binary.Write(raw, binary.LittleEndian, math.Float32bits(f))
	}
	id := onnxbuild.Identity(tensor.Float32, []int{-1, 3})
	sample := func(input string) string {
		return `max_batch_size: 4 model_warmup [ { name: "s" batch_size: 2 count: 2 inputs { key: "` + input + `" value: { data_type: TYPE_FP32 dims: [ 3 ] input_data_file: "x.bin" } } } ]`
	}
	dir := writeFiles(t, map[string][]byte{
		"ok/config.pbtxt":      []byte(sample("x")),
		"ok/warmup/x.bin":      raw.Bytes(),
		"ok/1/model.onnx":      id,
		"wrong/config.pbtxt":   []byte(sample("z")),
		"wrong/warmup/x.bin":   raw.Bytes(),
		"wrong/1/model.onnx":   id,
		"short/config.pbtxt":   []byte(sample("x")),
		"short/warmup/x.bin":   raw.Bytes()[:8],
		"short/1/model.onnx":   id,
		"missing/config.pbtxt": []byte(sample("x")),
		"missing/1/model.onnx": id,
	})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// a sample the model refuses keeps the version from serving
	for name, want := range map[string]string{
		"ok":      "",
		"wrong":   `model_warmup 0 ("s") failed`,
		"short":   "holds 8 bytes, but dims [3] of TYPE_FP32 take 12",
		"missing": "x.bin",
	} {
		_, _, release, err := r.Get(name, "")
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error mentioning %q", name, err, want)
		}
		if err == nil {
			release()
		}
	}
	// the data: the file's row repeated for each row of the batch; zeros;
	// random bytes, the same at every load
	e, _, release, err := r.Get("ok", "")
	if err != nil {
		t.Fatal(err)
	}
	release()
	in, err := e.Config.warmupInputs(e.Config.Warmup[0], r.modelDir("ok"))
	if err != nil {
		t.Fatal(err)
	}
	if x := in["x"]; !slices.Equal(x.Shape, []int{2, 3}) || !slices.Equal(x.Data.([]float32), []float32{1.5, -2, 3, 1.5, -2, 3}) {
		t.Errorf("file data %v %v", x.Shape, x.Data)
	}
	c, err := ParseTritonConfig([]byte(`model_warmup [ { name: "z" inputs [ { key: "a" value: { data_type: TYPE_INT64 dims: [ 2, 2 ] zero_data: true } },
	  { key: "b" value: { data_type: TYPE_UINT8 dims: [ 64 ] random_data: true } } ] } ]`), "")
	if err != nil {
		t.Fatal(err)
	}
	in, err = c.warmupInputs(c.Warmup[0], "")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.warmupInputs(c.Warmup[0], "")
	if a := in["a"]; !slices.Equal(a.Shape, []int{2, 2}) || !slices.Equal(a.Data.([]int64), make([]int64, 4)) {
		t.Errorf("zero data %v %v", a.Shape, a.Data)
	}
	b := in["b"].Data.([]uint8)
	if !slices.Equal(in["b"].Shape, []int{64}) || slices.Equal(b, make([]uint8, 64)) || !slices.Equal(b, again["b"].Data.([]uint8)) {
		t.Errorf("random data %v", b)
	}
}

func TestConfigOverrideOnLoad(t *testing.T) {
	id := onnxbuild.Identity(tensor.Float32, []int{-1, 3})
	dir := writeFiles(t, map[string][]byte{"m/config.pbtxt": []byte(`max_batch_size: 2`), "m/1/model.onnx": id, "m/2/model.onnx": id})
	r, err := Open(dir, Options{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	maxBatch := func() int64 { return r.Entries()[0].Config.MaxBatchSize }
	if maxBatch() != 2 || r.Entries()[0].VersionList() != "1, 2" {
		t.Fatalf("from the file: max_batch_size %d, versions %s", maxBatch(), r.Entries()[0].VersionList())
	}
	// Triton's JSON form: either field spelling, enums by name
	cfg, err := ParseConfigJSON([]byte(`{"name": "m", "maxBatchSize": 4, "version_policy": {"specific": {"versions": ["1"]}},
		"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3]}]}`), "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.LoadWith(context.Background(), "m", cfg); err != nil {
		t.Fatal(err)
	}
	if e := r.Entries()[0]; maxBatch() != 4 || e.VersionList() != "1" || e.Config.File != OverrideFile {
		t.Errorf("with the override: max_batch_size %d, versions %s, from %s", maxBatch(), e.VersionList(), e.Config.File)
	}
	// a load without one reads the file again
	if err := r.Load(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if maxBatch() != 2 || r.Entries()[0].VersionList() != "1, 2" {
		t.Errorf("after a plain load: max_batch_size %d, versions %s", maxBatch(), r.Entries()[0].VersionList())
	}
	for in, want := range map[string]string{
		`{"name": "other"}`:                 `differs from the model's directory "m"`,
		`{"max_batch_size": "x"}`:           "max_batch_size",
		`{"ensemble_scheduling": {}}`:       "ensemble_scheduling",
		`{"sequence_batching": {}}`:         "sequence_batching",
		`{"instance_group": [{"kind": 7}]}`: "instance_group",
		`not json`:                          OverrideFile,
	} {
		if _, err := ParseConfigJSON([]byte(in), "m"); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), OverrideFile+": ") {
			t.Errorf("%s: %v, want an error mentioning %q", in, err, want)
		}
	}
}

// TestConfigYAMLHasTritonsFields: config.yaml reads the same fields, with
// the same semantics, as config.pbtxt.
func TestConfigYAMLHasTritonsFields(t *testing.T) {
	y, err := ParseConfig([]byte(`
max_batch_size: 8
input:
  - {name: x, data_type: TYPE_FP32, format: FORMAT_NCHW, dims: [3, 48, 192]}
model_warmup:
  - name: zeros
    batch_size: 2
    inputs: {x: {data_type: TYPE_FP32, dims: [3, 48, 192], zero_data: true}}
optimization: {input_pinned_memory: {enable: true}}
parameters: {owner: vision}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseTritonConfig([]byte(`max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 48, 192 ] } ]
model_warmup [ { name: "zeros" batch_size: 2 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3, 48, 192 ] zero_data: true } } } ]
optimization { input_pinned_memory { enable: true } }
parameters { key: "owner" value: { string_value: "vision" } }`), "")
	if err != nil {
		t.Fatal(err)
	}
	if y.MaxBatchSize != p.MaxBatchSize || !slices.EqualFunc(y.Inputs, p.Inputs, func(a, b TensorConfig) bool {
		return a.Name == b.Name && a.DataType == b.DataType && slices.Equal(a.Dims, b.Dims)
	}) || len(y.Warmup) != 1 || len(p.Warmup) != 1 || y.Warmup[0].BatchSize != p.Warmup[0].BatchSize || y.Parameters["owner"] != p.Parameters["owner"] {
		t.Errorf("yaml %+v\npbtxt %+v", y, p)
	}
	// parameters are quantserve's metadata in config.yaml: not warned about
	if !slices.Equal(y.Ignored, []string{"input.format", "optimization"}) || !slices.Equal(p.Ignored, []string{"input.format", "optimization", "parameters"}) {
		t.Errorf("ignored: yaml %v, pbtxt %v", y.Ignored, p.Ignored)
	}
	for in, want := range map[string]string{
		"sequence_batching: {}\n":                    "sequence_batching: sequence batching keeps state",
		"ensemble_scheduling: {step: []}\n":          "ensemble_scheduling",
		"input: [{name: x, data_type: TYPE_FP32}]\n": "without dims",
		"model_warmup: [{name: w}]\n":                "no inputs",
		"parameters: {a: [1]}\n":                     "parameters.a",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "config.yaml: ") {
			t.Errorf("%q: %v, want an error mentioning %q", in, err, want)
		}
	}
}
