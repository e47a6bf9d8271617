package ops

import (
	"context"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/tensor"
)

// Operator is a compiled node. Run computes its outputs from its inputs
// (an absent optional input is nil) and never modifies an input.
type Operator interface {
	Run(c *Context, in []*tensor.Tensor) ([]*tensor.Tensor, error)
}

// Func is an Operator that needs nothing of the Context.
type Func func(in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Run calls f.
func (f Func) Run(_ *Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) { return f(in) }

// Context is what an operator runs with: the request's context (its
// deadline and cancellation) and the engine the model's products run on,
// over whose threads ParallelFor spreads an operator's own loops. One
// Context serves one run of a graph; operators may keep nothing of it.
type Context struct {
	ctx      context.Context
	engine   *gemm.Engine
	keepVals bool
	work     int    // units of work counted by Tick since its last look
	meter    *Meter // the run's account with its budget (Reserve)
	arena    *Arena // the run's recycled float32 outputs (Float32Output)
}

// NewContext returns the Context of one run on engine e (gemm.Default()
// when nil). keepValues says the run keeps every value (a trace for
// gradients): an operator must then not recycle the memory of its inputs.
func NewContext(ctx context.Context, e *gemm.Engine, keepValues bool) *Context {
	if e == nil {
		e = gemm.Default()
	}
	return &Context{ctx: ctx, engine: e, keepVals: keepValues}
}

// Context returns the request's context.
func (c *Context) Context() context.Context { return c.ctx }

// Engine returns the engine products run on: the kernel table of
// --kernels and the threads of --threads; gemm.Default() for a nil
// Context or one made without an engine.
func (c *Context) Engine() *gemm.Engine {
	if c == nil || c.engine == nil {
		return gemm.Default()
	}
	return c.engine
}

// Err returns the request's error once it is cancelled or past its
// deadline (nil for a nil Context or one without a request). Operators
// that loop long look at it through Tick, or at every step when each
// step is long; unlike Tick it is safe for concurrent use, so the chunks
// of a loop split across cores may call it.
func (c *Context) Err() error {
	if c == nil || c.ctx == nil {
		return nil
	}
	return c.ctx.Err()
}

// KeepValues reports whether the run keeps every value, so an operator
// must not recycle the memory of the values it reads.
func (c *Context) KeepValues() bool { return c.keepVals }

// WithContext returns a Context like c that runs under ctx (a subgraph
// run of a control-flow operator, say).
func (c *Context) WithContext(ctx context.Context) *Context {
	d := *c
	d.ctx = ctx
	return &d
}

// OnEngine returns a Context like c (the same request, account and
// arena) whose operators run on e: a model runs the steps it keeps on
// one core on the engine's Serial.
func (c *Context) OnEngine(e *gemm.Engine) *Context {
	d := *c
	d.engine = e
	return &d
}
