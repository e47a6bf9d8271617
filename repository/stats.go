package repository

import (
	"sync/atomic"
	"time"
)

// Stats counts the inferences of one model version, as Triton's statistics
// extension reports them. Recording is a handful of atomic adds, so every
// request records; a reload starts new versions with new counters.
type Stats struct {
	last       atomic.Int64 // unix milliseconds of the last inference request
	inferences atomic.Int64 // successful inferences, batch elements counted one by one
	executions atomic.Int64 // successful executions of the model
	success    durationStat
	fail       durationStat
	queue      durationStat
	input      durationStat
	infer      durationStat
	output     durationStat
}

type durationStat struct{ count, ns atomic.Int64 }

func (d *durationStat) add(t time.Duration) {
	d.count.Add(1)
	d.ns.Add(int64(t))
}

func (d *durationStat) load() Duration { return Duration{Count: d.count.Load(), NS: d.ns.Load()} }

// Timing is how one successful inference request spent its time.
type Timing struct {
	Batch  int64         // inferences in the request: its batch size (1 without a batch dimension)
	Queue  time.Duration // from the body's arrival to the start of decoding
	Input  time.Duration // decoding the request's tensors
	Infer  time.Duration // running the model
	Output time.Duration // encoding the response
}

// Success records a successful inference request that took total, from its
// body's arrival to its response encoded, spent as t says.
func (s *Stats) Success(now time.Time, total time.Duration, t Timing) {
	s.last.Store(now.UnixMilli())
	s.inferences.Add(max(t.Batch, 1))
	s.executions.Add(1)
	s.success.add(total)
	s.queue.add(t.Queue)
	s.input.add(t.Input)
	s.infer.add(t.Infer)
	s.output.add(t.Output)
}

// Failure records an inference request on this version that failed after
// total.
func (s *Stats) Failure(now time.Time, total time.Duration) {
	s.last.Store(now.UnixMilli())
	s.fail.add(total)
}

// Duration is a count of events and their summed duration in nanoseconds
// (Triton's $duration_stat).
type Duration struct {
	Count int64 `json:"count"`
	NS    int64 `json:"ns"`
}

// StatsSnapshot is a reading of Stats. Its counters are read one by one
// while requests may record, so they can disagree by the requests in
// flight.
type StatsSnapshot struct {
	LastInference  int64 // unix milliseconds; 0 before the first request
	InferenceCount int64
	ExecutionCount int64
	Success        Duration
	Fail           Duration
	Queue          Duration
	ComputeInput   Duration
	ComputeInfer   Duration
	ComputeOutput  Duration
}

// Snapshot reads the counters.
func (s *Stats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		LastInference:  s.last.Load(),
		InferenceCount: s.inferences.Load(),
		ExecutionCount: s.executions.Load(),
		Success:        s.success.load(),
		Fail:           s.fail.load(),
		Queue:          s.queue.load(),
		ComputeInput:   s.input.load(),
		ComputeInfer:   s.infer.load(),
		ComputeOutput:  s.output.load(),
	}
}
