package activation

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// Costs of one element of an activation's float32 loop, in the units of
// ops.ParallelFor's work (see ops.ScalarCost), from which a loop decides
// whether it splits across cores. Measured here against the sgemm
// kernel's ~50 multiply-adds a ns: Relu ~0.8 ns an element, HardSwish
// ~1.5, the LeakyRelu kernel ~0.25, with the output's allocation.
const (
	// kernelCost is an element of a table's vector kernel (LeakyRelu).
	kernelCost = 2 * ops.VectorCost
	// kernelExpCost is an element of a table's vector kernel of an
	// exponential and a division (Sigmoid ~0.5 ns, Tanh ~0.8).
	kernelExpCost = 8 * ops.VectorCost
	// cheapCost is a scalar Go loop's compare, select or multiply-add.
	cheapCost = ops.ScalarCost / 2
	// expCost is an exponential, a tanh or an erf per element, or a
	// chain of several operations (HardSwish).
	expCost = ops.ScalarCost
)

// floatMap32 applies an activation to a floating-point tensor: k32 (when
// not nil) fills dst from src for a float32 tensor, each element costing
// cost, in contiguous pieces split across the engine's cores
// (ops.Context.ParallelRows: k32 computes each element from its own input, so the
// split changes no bit); every other type goes through f
// in float64, rounded once. It stops with the request's error once the
// request ends.
func floatMap32(c *ops.Context, op string, x *tensor.Tensor, cost int, k32 func(dst, src []float32), f func(float64) float64) (*tensor.Tensor, error) {
	if d, ok := x.Data.([]float32); ok && k32 != nil {
		r := c.Float32Output(len(d)) // k32 writes every element
		if ops.OneCore(len(d), cost) {
			k32(r, d)
		} else if err := c.ParallelRows(len(d), cost, func(lo, hi int) { k32(r[lo:hi], d[lo:hi]) }); err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return arith.MapFloat(c, op, x, f)
}

// floatFunc is an activation without attributes over floating-point
// types: for float32 the kernel of picks from the engine's table when of
// is set, else k32 (if any), an element costing cost; f in float64
// otherwise.
type floatFunc struct {
	op   string
	cost int
	k32  func(dst, src []float32)
	of   func(*dispatch.Table) func(dst, src []float32)
	f    func(float64) float64
}

// floatBuilder returns the builder of the activation op: k32 for float32
// tensors (nil: f for them too), an element costing cost, f for the
// other floating-point types.
func floatBuilder(op string, cost int, k32 func(dst, src []float32), f func(float64) float64) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return (&floatFunc{op: op, cost: cost, k32: k32, f: f}).builder
}

// tableBuilder returns the builder of the activation op whose float32
// loop is a kernel of the engine's table (Sigmoid, Tanh: the same bits on
// every table), the one of picks; f for the other floating-point types.
func tableBuilder(op string, of func(*dispatch.Table) func(dst, src []float32), f func(float64) float64) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return (&floatFunc{op: op, cost: kernelExpCost, of: of, f: f}).builder
}

// builder checks a node of the activation and returns a.
func (a *floatFunc) builder(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *floatFunc) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	k := a.k32
	if a.of != nil {
		k = a.of(c.Engine().Table())
	}
	return ops.Result(floatMap32(c, a.op, in[0], a.cost, k, a.f))
}
