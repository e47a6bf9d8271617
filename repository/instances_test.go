package repository

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// TestInstanceGroups: instance_group counts (1 when not given) sum to the
// version's instances, from config.yaml and config.pbtxt alike; with
// dynamic batching they are the batcher's instances.
func TestInstanceGroups(t *testing.T) {
	y, err := ParseConfig([]byte("instance_group:\n  - {kind: KIND_CPU, count: 2}\n  - {name: spare}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseTritonConfig([]byte(`instance_group [ { kind: KIND_CPU count: 2 }, { name: "spare" kind: KIND_AUTO } ]`), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Config{y, p} {
		if n := c.Instances(); n != 3 {
			t.Errorf("%s: %d instances, want 3", c.File, n)
		}
	}
	b, err := ParseConfig([]byte("max_batch_size: 8\ndynamic_batching: {}\ninstance_group: [{count: 1}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if bc := b.Batching(); bc.Instances != 1 || !bc.Enabled() {
		t.Errorf("batching %+v, want 1 instance", bc)
	}
	if n := (*Config)(nil).Instances(); n != 0 {
		t.Errorf("no config: %d instances", n)
	}
	for in, want := range map[string]string{
		"instance_group: [{kind: KIND_GPU}]\n":         "KIND_GPU",
		"instance_group: [{count: -2}]\n":              "count -2",
		"instance_group: [{count: 2000}]\n":            "count 2000",
		"instance_group: [{count: 1, gpus: [0]}]\n":    "gpus",
		"instance_group: [{count: 700}, {count: 700}]": "1400 instances",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", in, err, want)
		}
	}
}

// TestInstancesBoundExecutions: a version without dynamic batching runs at
// most its instances' count of executions at once; a request finding them
// all busy waits for one, within its deadline.
func TestInstancesBoundExecutions(t *testing.T) {
	dir := writeFiles(t, map[string][]byte{
		"m/config.yaml":  []byte("instance_group: [{count: 1}]\n"),
		"m/1/model.onnx": onnxbuild.Identity(tensor.Float32, []int{-1}),
	})
	r, err := Open(dir, Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, v, release, err := r.Get("m", "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if v.Batcher != nil || cap(v.instances) != 1 {
		t.Fatalf("batcher %v, %d instances; want none and 1", v.Batcher, cap(v.instances))
	}
	in := map[string]*tensor.Tensor{v.Model.Inputs[0].Name: tensor.From([]int{2}, []float32{1, 2})}
	if _, err := v.Run(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	v.instances <- struct{}{} // the one instance is busy
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := v.Run(ctx, in, nil); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a request waiting for the busy instance: %v, want context.Canceled", err)
	}
	<-v.instances // free again
	out, err := v.Run(context.Background(), in, nil)
	if err != nil || len(out) != 1 {
		t.Errorf("after the instance is free: %v %v", out, err)
	}
	if len(v.instances) != 0 {
		t.Errorf("%d instances still held after the runs", len(v.instances))
	}
}
