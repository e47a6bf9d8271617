//go:build unix

package model_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// processCPU returns the CPU time the process has used, user and system:
// the collector's work included, on whichever thread it ran.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPlanEncoder runs BenchmarkEncoder's batch-1 runs on one thread
// and reports, besides the time, the process's CPU time a run (cpu-ns/op),
// the collector's included, which a busy shared machine disturbs less
// than the time: the figure to compare runs with and without the memory
// plan by.
func BenchmarkPlanEncoder(b *testing.B) {
	data := onnxbuild.Encoder(onnxbuild.DefaultEncoder).Bytes()
	exec := gemm.New(dispatch.Default(), 1)
	defer exec.Close()
	for _, c := range []struct {
		name string
		opts model.Options
	}{
		{"int8", model.Options{Exec: exec, Quantize: true, Scheme: quant.PerChannel}},
		{"float32", model.Options{Exec: exec}},
	} {
		m, err := model.LoadWith(data, c.opts)
		if err != nil {
			b.Fatal(err)
		}
		in := map[string]*tensor.Tensor{"input_ids": onnxbuild.EncoderInput(onnxbuild.DefaultEncoder, 1, 3)}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := m.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
