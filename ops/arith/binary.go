package arith

import (
	"slices"

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

func (b binary) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(compute(c, b.name, b.op, in[0], in[1]))
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
	return arithRuns(c, op, a, b, as, bs, func(r, a, b []float32, ia, ib int) {
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
	})
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
