package gemm

import "time"

// A Probe records whether the work an engine was given could run on more
// than one core: a product of at least MinParallelWork multiply-adds, or
// a Parallel loop of at least four units (two for each core) and as much
// work. It is what a profile asks of each step of a model ("did it run in
// parallel, or could it with more threads"). A Probe is not safe for concurrent use: one
// goroutine gives an engine work and reads the probe.
//
// It also times that work: the wall time from the start to the end of
// each product or loop large enough to split (the outermost, when one
// runs inside another on the caller), which more threads would shorten,
// where a step's other work is serial.
type Probe struct {
	split bool
	time  time.Duration
	depth int // splittable work running on the caller, outermost first
}

// Take reports whether work that could split has been seen since the last
// Take, and starts over.
func (p *Probe) Take() bool {
	s := p.split
	p.split = false
	return s
}

// TakeTime returns the time spent in work that could split since the
// last TakeTime, and starts over.
func (p *Probe) TakeTime() time.Duration {
	d := p.time
	p.time = 0
	return d
}

// Probed returns an engine like e (same table, same workers) whose
// products and Parallel loops report to p. It needs no Close.
func (e *Engine) Probed(p *Probe) *Engine {
	return &Engine{t: e.t, pool: e.pool, kcBytes: e.kcBytes, shared: true, probe: p}
}

// clockBase is the origin of Clock's readings.
var clockBase = time.Now()

// Clock returns the time since an origin fixed at start-up, on the
// monotonic clock alone: time.Now reads the wall clock too, which nearly
// doubles its cost (BenchmarkClock: 29-30 against 53-56 ns a reading
// under KVM's clock). The probes that time every step of a run and
// every loop in it read it: what they cost lands in the serial part
// they measure.
func Clock() time.Duration { return time.Since(clockBase) }

// probeMark is what note hands noted: whether the work was noted, and
// whether it is the outermost such work, timed from start.
type probeMark struct {
	start        time.Duration
	noted, timed bool
}

// note tells the probe about work of macs multiply-adds that at most
// parts cores could share (Engine.parts' bound: a product's units, half a
// Parallel loop's), and starts its clock when the work could split and is
// not inside other such work; noted, given what note returned, stops it:
//
//	defer e.noted(e.note(parts, macs))
func (e *Engine) note(parts, macs int) probeMark {
	if e.probe == nil || parts < 2 || macs < MinParallelWork {
		return probeMark{}
	}
	e.probe.split = true
	e.probe.depth++
	if e.probe.depth > 1 {
		return probeMark{noted: true}
	}
	return probeMark{start: Clock(), noted: true, timed: true}
}

// noted ends what note started.
func (e *Engine) noted(m probeMark) {
	if !m.noted {
		return
	}
	e.probe.depth--
	if m.timed {
		e.probe.time += Clock() - m.start
	}
}
