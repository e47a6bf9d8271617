package repository

import (
	"strings"
	"testing"
)

// FuzzParseTritonConfig feeds arbitrary files to the config.pbtxt reader:
// it returns a config or an error, never panics, and an error says which
// file it is about.
func FuzzParseTritonConfig(f *testing.F) {
	for _, seed := range []string{
		`name: "m" platform: "onnxruntime_onnx" max_batch_size: 8`,
		`version_policy: { specific: { versions: [1, 3] }}`,
		`input [ { name: "x", data_type: TYPE_FP32, dims: [ -1, 3 ] } ] output < name: 'y' data_type: TYPE_INT64 dims: 4 >`,
		"# comment\nname: \"a\" \"b\"; max_batch_size: 1e3",
		`instance_group [ { kind: KIND_CPU count: 2 } ]`,
		`a { b { c { } } }`,
		`name: "\x00\"`,
		`input [ { name: "x" data_type: TYPE_FP32 dims: [ 12 ] reshape: { shape: [ 3, -1 ] } } ] optimization { graph { level: 1 } }`,
		`max_batch_size: 4 model_warmup [ { name: "w" batch_size: 4 count: 2 inputs { key: "x" value: { data_type: TYPE_INT64 dims: [ 2 ] random_data: true } } } ]`,
		`parameters { key: "k" value: { string_value: "v" } } response_cache { enable: true } sequence_batching { }`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseTritonConfig([]byte(src), "")
		if err != nil {
			if c != nil || !strings.HasPrefix(err.Error(), "config.pbtxt: ") {
				t.Fatalf("config %v with error %q", c, err)
			}
			return
		}
		if c == nil || c.File != "config.pbtxt" || c.MaxBatchSize < 0 {
			t.Fatalf("config %+v", c)
		}
	})
}
