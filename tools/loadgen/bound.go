package main

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/tensor"
)

// kernelBound is what the wide model does in process, with no HTTP, no
// load generator and no server beside it: rows per second at batch 1 with
// GOMAXPROCS callers at once (the best batching off can do) and in
// batches of 64 (the best batching on can do). Their ratio bounds the
// batching ratio any server reaches on this machine.
type kernelBound struct {
	Batch1  float64 `json:"batch1_rows_per_s"`
	Batch64 float64 `json:"batch64_rows_per_s"`
}

func (b *kernelBound) ratio() float64 {
	if b == nil || b.Batch1 == 0 {
		return 0
	}
	return b.Batch64 / b.Batch1
}

// measureBound runs the wide model (input "x" of width in) for d at batch
// 1 and d at batch 64.
func measureBound(onnx []byte, in int, d time.Duration) (*kernelBound, error) {
	m, err := model.LoadWith(onnx, model.Options{Quantize: true})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rate := func(rows, callers int) (float64, error) {
		x := make([]float32, rows*in)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		inputs := map[string]*tensor.Tensor{"x": tensor.From([]int{rows, in}, x)}
		if _, err := m.Run(context.Background(), inputs, nil); err != nil { // warm-up
			return 0, err
		}
		var done atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		start := time.Now()
		end := start.Add(d)
		for range callers {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, err := m.Run(context.Background(), inputs, nil); err != nil {
						errs <- err
						return
					}
					done.Add(int64(rows))
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return 0, err
		}
		return float64(done.Load()) / time.Since(start).Seconds(), nil
	}
	var b kernelBound
	if b.Batch1, err = rate(1, runtime.GOMAXPROCS(0)); err != nil {
		return nil, err
	}
	if b.Batch64, err = rate(64, 1); err != nil {
		return nil, err
	}
	return &b, nil
}
