package gemm

// A Probe records whether the work an engine was given could run on more
// than one core: a product of at least MinParallelWork multiply-adds, or
// a Parallel loop of at least two units and as much work. It is what a
// profile asks of each step of a model ("did it run in parallel, or could
// it with more threads"). A Probe is not safe for concurrent use: one
// goroutine gives an engine work and reads the probe.
type Probe struct {
	split bool
}

// Take reports whether work that could split has been seen since the last
// Take, and starts over.
func (p *Probe) Take() bool {
	s := p.split
	p.split = false
	return s
}

// Probed returns an engine like e (same table, same workers) whose
// products and Parallel loops report to p. It needs no Close.
func (e *Engine) Probed(p *Probe) *Engine {
	return &Engine{t: e.t, pool: e.pool, kcBytes: e.kcBytes, shared: true, probe: p}
}

// note tells the probe about work of macs multiply-adds over units.
func (e *Engine) note(units, macs int) {
	if e.probe != nil && units >= 2 && macs >= MinParallelWork {
		e.probe.split = true
	}
}
