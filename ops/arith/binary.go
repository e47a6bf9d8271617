package arith

import (
	"slices"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

// Add, Sub, Mul and Div are the operators (from opset 7, when they took
// numpy broadcasting).
var (
	Add = ops.Op{ops.Register(ops.Descriptor{Type: "Add", Since: 7, Fold: true}, binaryBuilder("Add"))}
	Sub = ops.Op{ops.Register(ops.Descriptor{Type: "Sub", Since: 7, Fold: true}, binaryBuilder("Sub"))}
	Mul = ops.Op{ops.Register(ops.Descriptor{Type: "Mul", Since: 7, Fold: true}, binaryBuilder("Mul"))}
	Div = ops.Op{ops.Register(ops.Descriptor{Type: "Div", Since: 7, Fold: true}, binaryBuilder("Div"))}
)

// binOp is one of the binary operations Add, Sub, Mul and Div compute,
// and Min, Max, Sum and Mean fold their inputs with.
type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
	opMin
	opMax
)

var binOps = map[string]binOp{"Add": opAdd, "Sub": opSub, "Mul": opMul, "Div": opDiv, "Min": opMin, "Max": opMax, "Sum": opAdd, "Mean": opAdd}

// binary is Add, Sub, Mul or Div.
type binary struct {
	name string
	op   binOp
}

func binaryBuilder(name string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	op := binOps[name]
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return binary{name: name, op: op}, nil
	}
}

func (bin binary) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, y := in[0], in[1]
	if a, ok := x.Data.([]float32); ok && x.DType == tensor.Float32 && slices.Equal(x.Shape, y.Shape) {
		if b, ok := y.Data.([]float32); ok && y.DType == tensor.Float32 && len(a) == len(b) {
			return sameShapeF32(c, bin.op, x, a, b)
		}
	}
	return ops.Result(compute(c, bin.name, bin.op, x, y))
}

// sameShapeCost is the cost of an element of sameShapeF32 in units of
// ops.ParallelFor's work, as elem.Map2 counts it.
const sameShapeCost = ops.ScalarCost / 2

// sameShapeF32 is compute on float32 operands of one shape (a residual
// add, a gate's product): the same values, element by element, in one
// run, without the broadcast layout, and its output is the run's Single
// (ops.Context.NewSingle), so that a step of a few values allocates
// nothing.
func sameShapeF32(c *ops.Context, op binOp, x *tensor.Tensor, a, b []float32) ([]*tensor.Tensor, error) {
	if err := c.ReserveTensor(tensor.Float32, x.Shape); err != nil {
		return nil, err
	}
	tb := c.Engine().Table()
	r := c.Float32Output(len(a)) // every element is written
	if ops.OneCore(len(a), sameShapeCost) {
		f32Run(tb, op, r, a, b, 1, 1)
	} else if err := c.ParallelRows(len(a), sameShapeCost, func(lo, hi int) { f32Run(tb, op, r[lo:hi], a[lo:hi], b[lo:hi], 1, 1) }); err != nil {
		return nil, err
	}
	out := c.NewSingle(len(x.Shape))
	copy(out.Shape(), x.Shape)
	return out.Float32s(r), nil
}

// AddTensors returns a + b with broadcasting, as the Add operator computes it.
func AddTensors(a, b *tensor.Tensor) (*tensor.Tensor, error) { return compute(nil, "Add", opAdd, a, b) }

// MulTensors returns a · b with broadcasting, as the Mul operator computes it.
func MulTensors(a, b *tensor.Tensor) (*tensor.Tensor, error) { return compute(nil, "Mul", opMul, a, b) }

// compute computes a op b with broadcasting on any numeric type; FP16
// and BF16 compute in float32 and round once. name names the operator in
// errors. It stops with the request's error once the request ends (c
// may be nil: no request to watch).
func compute(c *ops.Context, name string, op binOp, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := ops.SameType(name, a, b); err != nil {
		return nil, err
	}
	switch ad := a.Data.(type) {
	case []float32:
		return arithF32(c, op, ad, b.Data.([]float32), a.Shape, b.Shape)
	case []float64:
		return arith(c, op, ad, b.Data.([]float64), a.Shape, b.Shape)
	case []int8:
		return arith(c, op, ad, b.Data.([]int8), a.Shape, b.Shape)
	case []uint8:
		return arith(c, op, ad, b.Data.([]uint8), a.Shape, b.Shape)
	case []int16:
		return arith(c, op, ad, b.Data.([]int16), a.Shape, b.Shape)
	case []uint16:
		return arith(c, op, ad, b.Data.([]uint16), a.Shape, b.Shape)
	case []int32:
		return arith(c, op, ad, b.Data.([]int32), a.Shape, b.Shape)
	case []uint32:
		return arith(c, op, ad, b.Data.([]uint32), a.Shape, b.Shape)
	case []int64:
		return arith(c, op, ad, b.Data.([]int64), a.Shape, b.Shape)
	case []uint64:
		return arith(c, op, ad, b.Data.([]uint64), a.Shape, b.Shape)
	case []tensor.F16:
		t, err := arith(c, op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape)
		return ops.ToHalf(t, tensor.Float16), err
	case []tensor.BF16:
		t, err := arith(c, op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape)
		return ops.ToHalf(t, tensor.BFloat16), err
	}
	return nil, ops.InputErrorf("%s does not take %v", name, a.DType)
}

func arith[T tensor.Numeric](c *ops.Context, op binOp, a, b []T, as, bs []int) (*tensor.Tensor, error) {
	return arithRuns(c, op, a, b, as, bs, func(r, a, b []T, ia, ib int) { arithRun(op, r, a, b, ia, ib) })
}

// arithRuns is arith computing each run of the broadcast with run.
func arithRuns[T tensor.Numeric](c *ops.Context, op binOp, a, b []T, as, bs []int, run func(r, a, b []T, ia, ib int)) (*tensor.Tensor, error) {
	if op == opDiv && !tensor.DTypeOf[T]().IsFloat() {
		if err := checkDivisors(c, b, "integer division by zero"); err != nil {
			return nil, err
		}
	}
	shape, r, err := elem.Map2(c, a, b, as, bs, run)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// vectorRun is the shortest run of two operands arithF32 gives the
// table's vector kernels: below it a kernel call costs more than the
// plain loop.
const vectorRun = 64

// arithF32 is arith on float32 values: a run of Add, Mul or Max whose
// operands are both contiguous (same-shaped tensors, or the shared
// trailing axes of broadcast ones) of vectorRun values or more runs on
// the table's vector kernels (AddBias, ScaleRows, MaxPair), each value
// one float32 addition or product or Go's max, as the plain loop
// computes it: the same bits.
func arithF32(c *ops.Context, op binOp, a, b []float32, as, bs []int) (*tensor.Tensor, error) {
	tb := c.Engine().Table()
	return arithRuns(c, op, a, b, as, bs, func(r, a, b []float32, ia, ib int) { f32Run(tb, op, r, a, b, ia, ib) })
}

// f32Run computes one run of arithF32: r[i] = a[i·ia] op b[i·ib], on
// tb's vector kernels where both operands are contiguous and the run
// long enough.
func f32Run(tb *dispatch.Table, op binOp, r, a, b []float32, ia, ib int) {
	if n := len(r); ia == 1 && ib == 1 && n >= vectorRun {
		switch op {
		case opAdd:
			copy(r, a[:n])
			tb.AddBias(r, b[:n], nil)
			return
		case opMul:
			copy(r, a[:n])
			tb.ScaleRows(r, b[:n])
			return
		case opMax:
			tb.MaxPair(r, a[:n], b[:n])
			return
		}
	}
	arithRun(op, r, a, b, ia, ib)
}

// checkDivisors refuses an integer divisor holding a zero with an input
// error saying msg.
func checkDivisors[T tensor.Numeric](c *ops.Context, b []T, msg string) error {
	for lo := 0; lo < len(b); lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, len(b))
		if err := c.Tick(hi - lo); err != nil {
			return err
		}
		if slices.Contains(b[lo:hi], 0) {
			return ops.InputErrorf("%s", msg)
		}
	}
	return nil
}

// arithRun computes one run: r[i] = a[i·ia] op b[i·ib], each case a
// plain loop over the slices.
func arithRun[T tensor.Numeric](op binOp, r, a, b []T, ia, ib int) {
	n := len(r)
	switch {
	case ia == 1 && ib == 1:
		a, b := a[:n], b[:n]
		switch op {
		case opAdd:
			for i := range r {
				r[i] = a[i] + b[i]
			}
		case opSub:
			for i := range r {
				r[i] = a[i] - b[i]
			}
		case opMul:
			for i := range r {
				r[i] = a[i] * b[i]
			}
		case opDiv:
			for i := range r {
				r[i] = a[i] / b[i]
			}
		case opMin:
			for i := range r {
				r[i] = min(a[i], b[i])
			}
		case opMax:
			for i := range r {
				r[i] = max(a[i], b[i])
			}
		}
	case ia == 1:
		a, y := a[:n], b[0]
		switch op {
		case opAdd:
			for i := range r {
				r[i] = a[i] + y
			}
		case opSub:
			for i := range r {
				r[i] = a[i] - y
			}
		case opMul:
			for i := range r {
				r[i] = a[i] * y
			}
		case opDiv:
			for i := range r {
				r[i] = a[i] / y
			}
		case opMin:
			for i := range r {
				r[i] = min(a[i], y)
			}
		case opMax:
			for i := range r {
				r[i] = max(a[i], y)
			}
		}
	case ib == 1:
		x, b := a[0], b[:n]
		switch op {
		case opAdd:
			for i := range r {
				r[i] = x + b[i]
			}
		case opSub:
			for i := range r {
				r[i] = x - b[i]
			}
		case opMul:
			for i := range r {
				r[i] = x * b[i]
			}
		case opDiv:
			for i := range r {
				r[i] = x / b[i]
			}
		case opMin:
			for i := range r {
				r[i] = min(x, b[i])
			}
		case opMax:
			for i := range r {
				r[i] = max(x, b[i])
			}
		}
	default:
		var v T
		one := []T{0}
		arithRun(op, one, a[:1], b[:1], 1, 1)
		v = one[0]
		for i := range r {
			r[i] = v
		}
	}
}
