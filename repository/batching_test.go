package repository

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

func TestParseBatchingConfig(t *testing.T) {
	c, err := ParseConfig([]byte("max_batch_size: 16\ndynamic_batching:\n  max_queue_delay_microseconds: 250\n  preferred_batch_size: [4, 8]\n  max_queue_size: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	bc := c.Batching()
	if !bc.Enabled() || bc.MaxBatchSize != 16 || bc.MaxQueueDelay != 250*time.Microsecond || !slices.Equal(bc.PreferredBatchSizes, []int{4, 8}) || bc.MaxQueueSize != 100 {
		t.Errorf("batching %+v", bc)
	}
	// dynamic_batching with no keys: on, no delay.
	if c, err := ParseConfig([]byte("max_batch_size: 4\ndynamic_batching: {}\n")); err != nil || !c.Batching().Enabled() || c.Batching().MaxQueueDelay != 0 {
		t.Errorf("empty dynamic_batching: %+v, %v", c, err)
	}
	// max_batch_size alone declares the batch dimension but does not batch (Triton).
	if c, err := ParseConfig([]byte("max_batch_size: 4\n")); err != nil || c.Batching().Enabled() {
		t.Errorf("max_batch_size alone: %v", err)
	}
	var nilConfig *Config
	if nilConfig.Batching().Enabled() {
		t.Error("no config batches")
	}
	for in, want := range map[string]string{
		"max_batch_size: -2\n":          "max_batch_size -2",
		"max_batch_size: 99999999999\n": "at most",
		"dynamic_batching: {}\n":        "needs max_batch_size",
		"max_batch_size: 4\ndynamic_batching: {preferred_batch_size: [5]}\n":                    "preferred_batch_size 5",
		"max_batch_size: 4\ndynamic_batching: {max_queue_delay_microseconds: -1}\n":             "max_queue_delay",
		"max_batch_size: 4\ndynamic_batching: {max_queue_delay_microseconds: 99999999999999}\n": "at most an hour",
		"max_batch_size: 4\ndynamic_batching: {max_queue_size: -1}\n":                           "max_queue_size -1",
		"max_batch_size: 4\ndynamic_batching: {priority_levels: 2}\n":                           "priority_levels",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error mentioning %q", in, err, want)
		}
	}
}

// TestVersionRunBatches: a source whose config batches gets a batcher, and
// Version.Run goes through it.
func TestVersionRunBatches(t *testing.T) {
	cfg, err := ParseConfig([]byte("max_batch_size: 8\ndynamic_batching: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	onnx := onnxbuild.MLP([]int{8, 4}, 1).Bytes()
	r := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Source{Name: "b", Version: 1, ONNX: onnx, Config: cfg}, Source{Name: "p", Version: 1, ONNX: onnx})
	_, vb, release, err := r.Get("b", "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, vp, release2, err := r.Get("p", "")
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if vb.Batcher == nil || vp.Batcher != nil {
		t.Fatalf("batchers: %v, %v", vb.Batcher, vp.Batcher)
	}
	in := map[string]*tensor.Tensor{"x": tensor.From([]int{2, 8}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1})}
	got, err := vb.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := vp.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["y"].Data.([]float32), want["y"].Data.([]float32)) {
		t.Errorf("batched %v, plain %v", got["y"].Data, want["y"].Data)
	}
	if st := vb.Batcher.Stats(); st.Requests != 1 || st.Executions != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestParseTritonDynamicBatching: a config.pbtxt's dynamic_batching maps
// to the same configuration as config.yaml's.
func TestParseTritonDynamicBatching(t *testing.T) {
	c, err := ParseTritonConfig([]byte(`max_batch_size: 16
dynamic_batching {
  max_queue_delay_microseconds: 250
  preferred_batch_size: [ 4, 8 ]
  default_queue_policy { max_queue_size: 100 }
}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	bc := c.Batching()
	if !bc.Enabled() || bc.MaxBatchSize != 16 || bc.MaxQueueDelay != 250*time.Microsecond || !slices.Equal(bc.PreferredBatchSizes, []int{4, 8}) || bc.MaxQueueSize != 100 {
		t.Errorf("batching %+v", bc)
	}
	if c, err := ParseTritonConfig([]byte("max_batch_size: 4\ndynamic_batching { }\n"), ""); err != nil || !c.Batching().Enabled() {
		t.Errorf("empty dynamic_batching: %v", err)
	}
	for in, want := range map[string]string{
		"max_batch_size: 4\ndynamic_batching { priority_levels: 2 }\n":                         "dynamic_batching.priority_levels",
		"max_batch_size: 4\ndynamic_batching { default_queue_policy { timeout_action: 1 } }\n": "default_queue_policy.timeout_action",
		"max_batch_size: 4\ndynamic_batching { preferred_batch_size: 8 }\n":                    "preferred_batch_size 8",
		"dynamic_batching { }\n": "needs max_batch_size",
	} {
		if _, err := ParseTritonConfig([]byte(in), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error mentioning %q", in, err, want)
		}
	}
	// With dynamic batching a request larger than max_batch_size runs alone;
	// without it, it is refused.
	shapes := [][]int{{9, 3}}
	c = &Config{MaxBatchSize: 4, File: "config.pbtxt"}
	if err := c.CheckBatch(shapes); err == nil {
		t.Error("max_batch_size 4 without dynamic_batching took 9 rows")
	}
	c.DynamicBatching = &DynamicBatching{}
	if err := c.CheckBatch(shapes); err != nil {
		t.Errorf("with dynamic batching: %v", err)
	}
}
