package model_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func readTensor(t testing.TB, path string) *tensor.Tensor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onnxpb.UnmarshalTensor(b)
	if err != nil {
		t.Fatal(err)
	}
	x, err := model.TensorFromONNX(p)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestEncoderMatchesONNXRuntime runs the transformer encoder of
// internal/onnxbuild (4 layers, hidden 256, 4 heads, 128 tokens) on a
// batch of 2 and compares with ONNX Runtime 1.30's output for the same
// model and input (testdata/encoder, written by tools/ortref): float32
// within ONNX's relative tolerance, int8 weights (the default) within 2%
// of the output's range; and the same encoder spelled out as exporters
// write it below opset 17 (LayerNormalization and Gelu in elementary
// operators), which the rewrites run as the same steps.
func TestEncoderMatchesONNXRuntime(t *testing.T) {
	in := readTensor(t, "testdata/encoder/input_0.pb")
	want := readTensor(t, "testdata/encoder/output_0.pb").Data.([]float32)
	spelled := onnxbuild.DefaultEncoder
	spelled.Spelled = true
	var span float64
	for _, w := range want {
		span = max(span, math.Abs(float64(w)))
	}
	steps := map[bool][]string{}
	for _, enc := range []onnxbuild.EncoderConfig{onnxbuild.DefaultEncoder, spelled} {
		data := onnxbuild.Encoder(enc).Bytes()
		for _, c := range []struct {
			name     string
			opts     model.Options
			rel, abs float64
		}{
			{"float32", model.Options{}, 1e-3, 1e-5},
			{"int8", model.Options{Quantize: true, Scheme: quant.PerChannel}, 0, 0.02 * span},
		} {
			if enc.Spelled {
				c.name += ", spelled out at opset 14"
			}
			m, err := model.LoadWith(data, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, s := range m.Steps() {
				ops = append(ops, s.Op)
			}
			if prev, ok := steps[c.opts.Quantize]; ok && !slices.Equal(ops, prev) {
				t.Errorf("%s: steps %v, the opset 20 encoder's %v", c.name, ops, prev)
			}
			steps[c.opts.Quantize] = ops
			out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"input_ids": in}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := out["hidden"].Data.([]float32)
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", c.name, len(got), len(want))
			}
			var worst float64
			bad := 0
			for i := range want {
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d)
				if d > c.abs+c.rel*math.Abs(float64(want[i])) {
					if bad < 3 {
						t.Errorf("%s: hidden[%d] = %v, ONNX Runtime %v", c.name, i, got[i], want[i])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d values differ", c.name, bad, len(want))
			}
			t.Logf("%s: largest difference from ONNX Runtime %.3g (%.3f%% of the output range %.3g)", c.name, worst, 100*worst/span, span)
		}
	}
}

// BenchmarkEncoder runs the transformer encoder of internal/onnxbuild
// (tools/modelbench's "encoder") on GOMAXPROCS threads (-test.cpu N,
// one value an invocation: see benchCNN) at batch 1 and 8, with int8
// weights (the default) and in float32, and with int8 weights the same
// encoder spelled out at opset 14 (EncoderConfig.Spelled, the rewrites'
// work); sequences/s is the figure the table in docs/performance.md
// reports. It also reports the process's CPU time a run (cpu-ns/op,
// where the system tells it), the collector's included, which a busy
// shared machine disturbs less than the time: the figure to compare runs
// with and without the memory plan by.
func BenchmarkEncoder(b *testing.B) {
	spelled := onnxbuild.DefaultEncoder
	spelled.Spelled = true
	exec := gemm.New(dispatch.Default(), runtime.GOMAXPROCS(0))
	defer exec.Close()
	for _, c := range []struct {
		name string
		enc  onnxbuild.EncoderConfig
		opts model.Options
	}{
		{"int8", onnxbuild.DefaultEncoder, model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel}},
		{"float32", onnxbuild.DefaultEncoder, model.Options{Exec: exec}},
		{"int8-spelled", spelled, model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel}},
	} {
		m, err := model.LoadWith(onnxbuild.Encoder(c.enc).Bytes(), c.opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, batch := range []int{1, 8} {
			in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, batch, 3)}
			b.Run(fmt.Sprintf("%s/batch=%d", c.name, batch), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := model.CPUTime()
				for b.Loop() {
					if _, err := m.Run(context.Background(), in, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "seq/s")
				if cpu := model.CPUTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
