package api

import (
	"strconv"

	"github.com/quantserve/quantserve/telemetry"
)

// observeBatching exports the batching counters of every model version
// that batches (repository.Version.Batcher) in /metrics.
func (s *server) observeBatching() {
	if s.tel == nil || s.repo == nil {
		return
	}
	err := s.tel.ObserveBatching(func() []telemetry.BatchCounts {
		var out []telemetry.BatchCounts
		for _, e := range s.repo.Entries() {
			for _, v := range e.Versions {
				if v.Batcher == nil {
					continue
				}
				st := v.Batcher.Stats()
				c := telemetry.BatchCounts{Model: e.Name, Version: strconv.FormatInt(v.Number, 10),
					Requests: st.Requests, Rejected: st.Rejected, Waiting: int64(st.Waiting),
					QueueSeconds: float64(st.Queue.NS) / 1e9, ComputeSeconds: float64(st.Compute.NS) / 1e9,
					Executions: map[int64]int64{}}
				for _, b := range st.Batches {
					c.Executions[int64(b.Size)] = b.Count
				}
				out = append(out, c)
			}
		}
		return out
	})
	if err != nil {
		s.log.Error("batching metrics disabled", "err", err)
	}
}
