package batching

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// BenchmarkClients runs the load generator's wide model (two 4096×4096
// int8 Gemm layers) in process, without HTTP, under 64 clients that each
// send batch-1 requests one after another: batching off (each request
// runs alone, as the server runs it without dynamic batching) and on
// (the batcher with the default instances and the suite's 1 ms queue
// delay). It reports requests per second and, batching on, the mean
// number of requests per execution.
func BenchmarkClients(b *testing.B) {
	const width, clients = 4096, 64
	m, err := model.LoadWith(onnxbuild.MLP([]int{width, width, width}, 1).Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := make([]map[string]*tensor.Tensor, clients)
	for i := range inputs {
		x := make([]float32, width)
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		inputs[i] = map[string]*tensor.Tensor{"x": tensor.From([]int{1, width}, x)}
	}
	run := func(b *testing.B, infer func(map[string]*tensor.Tensor) error) {
		var left atomic.Int64
		left.Store(int64(b.N))
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if err := infer(inputs[c]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	}
	ctx := context.Background()
	b.Run("off", func(b *testing.B) {
		run(b, func(in map[string]*tensor.Tensor) error { _, err := m.Run(ctx, in, nil); return err })
	})
	b.Run("on", func(b *testing.B) {
		bt, err := New(m, Config{MaxBatchSize: 64, Dynamic: true, MaxQueueDelay: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(in map[string]*tensor.Tensor) error { _, err := bt.Run(ctx, in, nil); return err })
		if st := bt.Stats(); st.Executions > 0 {
			b.ReportMetric(float64(st.Requests)/float64(st.Executions), "req/batch")
		}
	})
}
