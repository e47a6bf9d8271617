package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// openLoad sends rate requests per second for d, each when it is due
// whether or not earlier ones were answered (an open loop: a slow server
// does not slow the arrivals), at most maxOpen outstanding; a request due
// beyond that is dropped and counted. Latency counts from when a request
// was due, so a server that falls behind shows it in full (no coordinated
// omission).
func openLoad(ctx context.Context, sc *scenario, rate float64, d, timeout time.Duration, maxOpen int) *report {
	rep := &report{Scenario: sc.name, Method: sc.method, URL: sc.url, BodyBytes: len(sc.body), Connections: maxOpen, Rate: rate,
		Status: map[string]int{}, Errors: map[string]int{}}
	if sc.grpc != nil {
		rep.GRPCConns = sc.grpc.conns
	}
	cl, closeAll, err := sc.pool(maxOpen, timeout)
	if err != nil {
		rep.Errors[err.Error()]++
		return rep
	}
	defer closeAll()
	total := int(rate * d.Seconds())
	var (
		mu    sync.Mutex
		lat   []time.Duration
		wg    sync.WaitGroup
		slots = make(chan struct{}, maxOpen)
	)
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		select {
		case slots <- struct{}{}:
		default:
			mu.Lock()
			rep.Dropped++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			status, kind := cl.call(ctx)
			took := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			if kind != "" {
				rep.Errors[kind]++
				return
			}
			lat = append(lat, took)
			rep.Status[status]++
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	rep.Requests = len(lat)
	rep.Seconds = elapsed.Seconds()
	rep.PerSecond = float64(len(lat)) / elapsed.Seconds()
	rep.LatencyMS = latencies{P50: ms(quantile(lat, 0.50)), P90: ms(quantile(lat, 0.90)), P99: ms(quantile(lat, 0.99)), Max: ms(quantile(lat, 1))}
	return rep
}
