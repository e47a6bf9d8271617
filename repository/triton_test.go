package repository

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

func TestParseTritonConfig(t *testing.T) {
	c, err := ParseTritonConfig([]byte(`
# a config as Triton's docs write them
name: "m"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] }}
input [
  {
    name: "x"
    data_type: TYPE_FP32
    dims: [ 3, -1 ]
  }
]
output [ { name: 'y', data_type: TYPE_INT64, dims: 4 } ]
default_model_filename: "net.onnx";
`), "m")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "m" || c.MaxBatchSize != 8 || c.ModelFile != "net.onnx" || c.File != "config.pbtxt" ||
		c.VersionPolicy == nil || c.VersionPolicy.Specific == nil || !slices.Equal(c.VersionPolicy.Specific.Versions, []int64{1, 3}) ||
		len(c.Inputs) != 1 || c.Inputs[0].Name != "x" || c.Inputs[0].DataType != tensor.Float32 || !slices.Equal(c.Inputs[0].Dims, []int{3, -1}) ||
		len(c.Outputs) != 1 || c.Outputs[0].Name != "y" || c.Outputs[0].DataType != tensor.Int64 || !slices.Equal(c.Outputs[0].Dims, []int{4}) {
		t.Errorf("%+v", c)
	}
	// the other spellings of the text format: <...>, "field {", repeated fields, comments, ';'
	c, err = ParseTritonConfig([]byte(`backend: "onnxruntime" version_policy < latest { num_versions: 2 } >
input { name: "a" data_type: TYPE_BOOL dims: 1 dims: 2 }; input { name: "b" "" data_type: TYPE_UINT8 dims: [ ] dims: 5 }`), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.VersionPolicy.Latest == nil || c.VersionPolicy.Latest.NumVersions != 2 || len(c.Inputs) != 2 || !slices.Equal(c.Inputs[0].Dims, []int{1, 2}) || !slices.Equal(c.Inputs[1].Dims, []int{5}) {
		t.Errorf("%+v", c)
	}

	for in, want := range map[string]string{
		`instance_group [ { kind: KIND_GPU count: 1 } ]`:                                                   "KIND_GPU",
		`instance_group [ { kind: KIND_CPU gpus: [0] } ]`:                                                  "instance_group.gpus: quantserve runs models on the CPU",
		`instance_group [ { kind: "KIND_CPU" } ]`:                                                          "invalid value for enum",
		`instance_group [ { kind: KIND_CPU rate_limiter {} } ]`:                                            "instance_group.rate_limiter is not supported",
		`instance_group [ { count: -1 } ]`:                                                                 "count -1",
		`instance_group [ { count: 1000 }, { count: 1000 } ]`:                                              "2000 instances",
		`sequence_batching { max_sequence_idle_microseconds: 5000000 }`:                                    "sequence_batching: sequence batching keeps state",
		`ensemble_scheduling { step [ { model_name: "a" model_version: -1 } ] }`:                           "ensemble_scheduling: ensembles chain models",
		`input [ { name: "x" data_type: TYPE_FP32 dims: 1 is_shape_tensor: true } ]`:                       "input.is_shape_tensor is not supported",
		`version_policy: { latest: { num_versions: 1 } all: {} }`:                                          "oneof",
		`version_policy: { latest: { num_versions: 0 } }`:                                                  "num_versions must be at least 1",
		`version_policy: { newest: {} }`:                                                                   "unknown field: newest",
		`name: "other"`:                                                                                    `differs from the model's directory "m"`,
		`platform: "tensorrt_plan"`:                                                                        "tensorrt_plan",
		`backend: "python"`:                                                                                "python",
		`max_batch_size: -1`:                                                                               "negative",
		`max_batch_size: "8"`:                                                                              "invalid value for int32",
		`max_batch_size: 8 max_batch_size: 9`:                                                              "is repeated",
		`input [ { name: "x" data_type: TYPE_FP16 dims: 1 } ]`:                                             "TYPE_FP16",
		`input [ { name: "x" data_type: TYPE_STRING dims: 1 } ]`:                                           "TYPE_STRING",
		`input [ { name: "x" dims: 1 } ]`:                                                                  "without a data_type",
		`input [ { data_type: TYPE_FP32 dims: 1 } ]`:                                                       "without a name",
		`input [ { name: "x" data_type: TYPE_FP32 } ]`:                                                     "without dims",
		`input [ { name: "x" data_type: TYPE_FP32 dims: -2 } ]`:                                            "-2",
		`input [ { name: "x" data_type: TYPE_FP32 dims: 1 }, { name: "x" data_type: TYPE_FP32 dims: 1 } ]`: "declared twice",
		`default_model_filename: "../x.onnx"`:                                                              "default_model_filename",
		`name: "m`:                                                                                         "unexpected EOF",
		`name "m"`:                                                                                         "missing field separator",
		`input [ { name: "x" `:                                                                             "unexpected EOF",
		`name: @`:                                                                                          "invalid scalar value",
		`}`:                                                                                                "invalid field name",
		`input [ { name: "x" data_type: TYPE_FP32 dims: 1 reshape: { shape: [-1, -1] } } ]`: "one dynamic (-1) dimension at most",
		`model_warmup [ { name: "w" } ]`: "no inputs",
		`model_warmup [ { name: "w" inputs { key: "x" value: { data_type: TYPE_FP32 dims: [-1] zero_data: true } } } ]`:              "warm-up dims are sizes",
		`model_warmup [ { name: "w" inputs { key: "x" value: { data_type: TYPE_FP32 dims: [1] } } } ]`:                               "zero_data, random_data or input_data_file",
		`model_warmup [ { name: "w" inputs { key: "x" value: { data_type: TYPE_FP32 dims: [1] input_data_file: "../x" } } } ]`:       "warmup directory",
		`model_warmup [ { name: "w" batch_size: 2 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [1] zero_data: true } } } ]`: "batch_size 2",
		strings.Repeat("a { ", 40) + strings.Repeat("} ", 40):                                                                        "unknown field: a",
	} {
		_, err := ParseTritonConfig([]byte(in), "m")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "config.pbtxt: ") {
			t.Errorf("%q: error %v, want one mentioning %q", in, err, want)
		}
	}
}

// writeModel writes files (path -> bytes) under a new repository directory.
func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTritonConfigCheckedAgainstTheModel(t *testing.T) {
	batched := onnxbuild.Identity(tensor.Float32, []int{-1, 3})
	cfg := func(s string) []byte { return []byte(s) }
	for _, c := range []struct {
		config string
		model  []byte
		want   string // "" means it loads
	}{
		{`max_batch_size: 4 input [{name: "x", data_type: TYPE_FP32, dims: [3]}] output [{name: "y", data_type: TYPE_FP32, dims: [3]}]`, batched, ""},
		{`input [{name: "x", data_type: TYPE_FP32, dims: [-1, 3]}]`, batched, ""},
		{`output [{name: "y", data_type: TYPE_FP32, dims: [-1, 3]}]`, batched, ""},
		{`input [{name: "x", data_type: TYPE_INT64, dims: [-1, 3]}]`, batched, "data_type TYPE_INT64, but the model's is TYPE_FP32"},
		{`input [{name: "x", data_type: TYPE_FP32, dims: [3]}]`, batched, "dims [3], but the model's dims are [-1 3]"},
		{`max_batch_size: 4 input [{name: "x", data_type: TYPE_FP32, dims: [4]}]`, batched, "after the batch dimension"},
		{`input [{name: "z", data_type: TYPE_FP32, dims: [-1, 3]}]`, batched, `input "z" is not in the model (its inputs: x)`},
		{`max_batch_size: 2`, onnxbuild.Identity(tensor.Float32, []int{2, 3}), "needs a dynamic first (batch) dimension"},
	} {
		dir := writeFiles(t, map[string][]byte{"m/config.pbtxt": cfg(c.config), "m/1/model.onnx": c.model})
		r, err := Open(dir, Options{Log: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		e := r.Entries()[0]
		switch {
		case c.want == "" && !e.Ready():
			t.Errorf("%s: %v", c.config, e.Err)
		case c.want != "" && (e.Ready() || !strings.Contains(e.Err.Error(), c.want) || !strings.Contains(e.Err.Error(), "config.pbtxt")):
			t.Errorf("%s: error %v, want one mentioning %q", c.config, e.Err, c.want)
		case c.want != "" && !strings.Contains(r.NotReady(), c.want):
			t.Errorf("%s: not ready %q does not say why", c.config, r.NotReady())
		}
	}

	// max_batch_size bounds requests
	dir := writeFiles(t, map[string][]byte{"m/config.pbtxt": cfg(`max_batch_size: 4`), "m/1/model.onnx": batched})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	conf := r.Entries()[0].Config
	if err := conf.CheckBatch([][]int{{4, 3}}); err != nil {
		t.Error(err)
	}
	if err := conf.CheckBatch([][]int{{5, 3}}); err == nil || !strings.Contains(err.Error(), "max_batch_size of 4") {
		t.Errorf("batch of 5: %v", err)
	}
}

func TestTritonConfigFileAndPolicy(t *testing.T) {
	id := onnxbuild.Identity(tensor.Float32, []int{-1})
	dir := writeFiles(t, map[string][]byte{
		"m/config.pbtxt":    []byte(`name: "m" default_model_filename: "net.onnx" version_policy: { latest: { num_versions: 1 } }`),
		"m/1/net.onnx":      id,
		"m/2/net.onnx":      id,
		"m/2/model.onnx":    []byte("not read"),
		"both/config.yaml":  []byte("{}"),
		"both/config.pbtxt": []byte(""),
		"both/1/model.onnx": id,
	})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, v, release, err := r.Get("m", "")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if v.Number != 2 || r.Entries()[1].VersionList() != "2" {
		t.Errorf("latest 1 served version %d (loaded %s)", v.Number, r.Entries()[1].VersionList())
	}
	if _, _, _, err := r.Get("both", ""); err == nil || !strings.Contains(err.Error(), "both config.yaml and config.pbtxt") {
		t.Errorf("both configs: %v", err)
	}
	if !strings.Contains(r.NotReady(), `model "both"`) {
		t.Errorf("not ready: %q", r.NotReady())
	}
}

func TestSingleModelLayout(t *testing.T) {
	id := onnxbuild.Identity(tensor.Float32, []int{-1})
	dir := writeFiles(t, map[string][]byte{"digits/model.onnx": id, "digits/config.pbtxt": []byte(`max_batch_size: 0`), "other/resnet.onnx": id, "named/model.onnx": id, "named/config.pbtxt": []byte(`name: "renamed"`)})
	for _, c := range []struct{ root, name, want string }{
		{filepath.Join(dir, "digits"), "", "digits"},
		{filepath.Join(dir, "digits", "model.onnx"), "", "digits"},
		{filepath.Join(dir, "other", "resnet.onnx"), "", "resnet"},
		{filepath.Join(dir, "digits"), "mine", "mine"},
		{filepath.Join(dir, "named"), "", "renamed"},
		{filepath.Join(dir, "named"), "flag", "flag"},
	} {
		r, err := Open(c.root, Options{Log: quiet(), ModelName: c.name})
		if err != nil {
			t.Fatalf("%s: %v", c.root, err)
		}
		e, v, release, err := r.Get(c.want, "")
		if err != nil {
			t.Errorf("%s (--model-name %q): %v", c.root, c.name, err)
			continue
		}
		release()
		if v.Number != 1 || !r.Ready() || len(r.Index()) != 1 || r.Index()[0].Name != c.want {
			t.Errorf("%s: version %d, ready %v, index %+v", c.root, v.Number, r.Ready(), r.Index())
		}
		// load re-reads the file; another name is not in this repository
		if err := r.Load(context.Background(), e.Name); err != nil {
			t.Errorf("reload: %v", err)
		}
		if err := r.Load(context.Background(), "nope"); err == nil {
			t.Error("load of another name succeeded")
		}
	}
	if _, err := Open(filepath.Join(dir, "digits", "config.pbtxt"), Options{Log: quiet()}); err == nil || !strings.Contains(err.Error(), "not an .onnx model") {
		t.Errorf("a file that is not a model: %v", err)
	}
	if _, err := Open(dir, Options{Log: quiet(), ModelName: "x"}); err == nil || !strings.Contains(err.Error(), "--model-name") {
		t.Errorf("--model-name on a repository of models: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "other", "resnet.onnx"), Options{Log: quiet(), ModelName: "a/b"}); err == nil || !strings.Contains(err.Error(), "not a valid model name") {
		t.Errorf("bad --model-name: %v", err)
	}
}

func TestEmptyRepositoryIsNotReady(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ready() || !strings.Contains(r.NotReady(), "no model to serve") || !strings.Contains(r.NotReady(), dir) {
		t.Errorf("ready %v: %q", r.Ready(), r.NotReady())
	}
	if idx := r.Index(); idx == nil || len(idx) != 0 {
		t.Errorf("index of an empty repository: %#v, want an empty list", idx)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
