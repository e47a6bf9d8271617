package batching

import (
	"slices"
	"time"
)

// Duration is a count of events and their summed time in nanoseconds
// (Triton's duration statistic).
type Duration struct {
	Count int64 `json:"count"`
	NS    int64 `json:"ns"`
}

func (d *Duration) add(t time.Duration) {
	d.Count++
	d.NS += int64(t)
}

// BatchStat counts the executions of one batch size and their time
// (Triton's batch_stats entry: compute_infer per batch size).
type BatchStat struct {
	Size  int   `json:"batch_size"`
	Count int64 `json:"count"`
	NS    int64 `json:"ns"`
}

// Stats are a batcher's counters since its model version loaded: what the
// statistics extension and /metrics report.
type Stats struct {
	// Requests computed (batched or alone; a request that left its batch
	// while it ran included) and the rows (batch elements) they held.
	Requests   int64 `json:"requests"`
	Inferences int64 `json:"inferences"`
	// Executions of the model: one per batch, one per request run alone.
	// Requests/Executions is the mean number of requests per execution.
	Executions int64 `json:"executions"`
	// Alone counts requests run by themselves: larger than
	// MaxBatchSize, not stackable, retried after a failed batch, or
	// after batching was disabled.
	Alone int64 `json:"alone"`
	// Retried counts requests whose batch failed and that then ran alone.
	Retried int64 `json:"retried"`
	// Cancelled counts requests whose context ended while they waited in
	// the queue or in a running batch.
	Cancelled int64 `json:"cancelled"`
	// Rejected counts requests refused with ErrQueueFull.
	Rejected int64 `json:"rejected"`
	// Waiting is the number of requests in the queue now.
	Waiting int `json:"waiting"`
	// Queue is the time requests waited from submission to the start of
	// their batch's execution (batched requests only).
	Queue Duration `json:"queue"`
	// Compute is the executions' time (stacking inputs, running the
	// model); Batches splits it by batch size (rows), ascending.
	Compute Duration    `json:"compute"`
	Batches []BatchStat `json:"batches"`
	// Disabled says why batching stopped, if it did ("" otherwise).
	Disabled string `json:"disabled,omitempty"`
}

// counters are Stats being recorded, under Batcher.mu.
type counters struct {
	requests, inferences, alone, retried, cancelled, rejected int64
	queue, compute                                            Duration
	sizes                                                     map[int]*BatchStat
}

// execute records one execution of rows rows that took d.
func (c *counters) execute(rows int, d time.Duration) {
	c.compute.add(d)
	s := c.sizes[rows]
	if s == nil {
		s = &BatchStat{Size: rows}
		c.sizes[rows] = s
	}
	s.Count++
	s.NS += int64(d)
}

// Stats returns the batcher's counters.
func (b *Batcher) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &b.st
	s := Stats{
		Requests: c.requests, Inferences: c.inferences, Executions: c.compute.Count,
		Alone: c.alone, Retried: c.retried, Cancelled: c.cancelled, Rejected: c.rejected,
		Waiting: len(b.queue), Queue: c.queue, Compute: c.compute,
	}
	for _, bs := range c.sizes {
		s.Batches = append(s.Batches, *bs)
	}
	slices.SortFunc(s.Batches, func(x, y BatchStat) int { return x.Size - y.Size })
	if b.disabled != nil {
		s.Disabled = b.disabled.Error()
	}
	return s
}
