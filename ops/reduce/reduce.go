package reduce

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare.
// Their axes are an attribute up to opset 12 (ReduceSum) or 17 (the
// others) and an optional input after; the semantics are otherwise the
// same in every opset, the later ones only widening the types (INT8 and
// UINT8 for ReduceMax/Min at 12, BFLOAT16 at 13, BOOL for ReduceMax/Min
// at 20). Reducing an empty set of values gives the reduction's identity:
// 0 for the sums and norms, 1 for the product, -inf for ReduceMax (the
// type's minimum for integers, false for BOOL), +inf for ReduceMin, -inf
// for ReduceLogSum and ReduceLogSumExp, and NaN (0/0) for ReduceMean.

type reduceKind uint8

const (
	reduceSum reduceKind = iota
	reduceMean
	reduceMax
	reduceMin
	reduceProd
	reduceL1
	reduceL2
	reduceLogSum
	reduceLogSumExp
	reduceSumSquare
)

// registerReduction registers the reduction op of the given kind in both
// forms: axes as an attribute before opset axesInput, as an input from it.
func registerReduction(op string, kind reduceKind, axesInput int64) ops.Op {
	attr := ops.Register(ops.Descriptor{Type: op, Since: 1, Until: axesInput - 1, Fold: true}, func(n *ops.Node, at *ReduceAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		a := *at
		return &reduction{op: op, kind: kind, axes: &a}, nil
	})
	input := ops.Register(ops.Descriptor{Type: op, Since: axesInput, Fold: true}, func(n *ops.Node, at *ReduceInputAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 2, 1, 1); err != nil {
			return nil, err
		}
		a := *at
		return &reduction{op: op, kind: kind, axes: &a}, nil
	})
	return ops.Op{attr, input}
}

// reduction is a compiled reduction: its op type, what it computes, and
// its attributes (a copy), which say the axes and whether they stay.
type reduction struct {
	op   string
	kind reduceKind
	axes Reduction
}

func (r *reduction) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	red, err := r.axes.ReducedAxes(x.Rank(), ops.Optional(in, 1))
	if err != nil {
		return nil, err
	}
	y, err := reduceTensor(c, r.op, r.kind, x, red, r.axes.Keep())
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// reduceTensor reduces x over the axes red marks; op names the operator
// in errors.
func reduceTensor(c *ops.Context, op string, kind reduceKind, x *tensor.Tensor, red []bool, keep bool) (*tensor.Tensor, error) {
	g, err := newReduceGeom(c, x.Shape, red, keep)
	if err != nil {
		return nil, err
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		out = ops.RoundFloat64s(reduceFloat(kind, d, g), x.DType)
	case []float64:
		out = reduceFloat(kind, d, g)
	case []tensor.F16:
		out = ops.RoundFloat64s(reduceFloat(kind, tensor.HalfToFloat32(d), g), x.DType)
	case []tensor.BF16:
		out = ops.RoundFloat64s(reduceFloat(kind, tensor.HalfToFloat32(d), g), x.DType)
	case []int8:
		out = reduceInt(kind, d, g)
	case []uint8:
		out = reduceInt(kind, d, g)
	case []int16:
		out = reduceInt(kind, d, g)
	case []uint16:
		out = reduceInt(kind, d, g)
	case []int32:
		out = reduceInt(kind, d, g)
	case []uint32:
		out = reduceInt(kind, d, g)
	case []int64:
		out = reduceInt(kind, d, g)
	case []uint64:
		out = reduceInt(kind, d, g)
	case []bool:
		if kind != reduceMax && kind != reduceMin {
			return nil, ops.InputErrorf("%s does not take BOOL", op)
		}
		out = reduceBool(kind == reduceMax, d, g)
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if g.err != nil {
		return nil, g.err
	}
	return &tensor.Tensor{DType: x.DType, Shape: g.out, Data: out}, nil
}

// reduceFloat reduces floating-point x, accumulating in float64 across
// runs; a reduced run (the last axes, contiguous) is summed in blocks in
// x's own type with independent partial sums, so float32 rows stay tight
// float32 loops.
func reduceFloat[T float32 | float64](kind reduceKind, x []T, g *reduceGeom) []float64 {
	switch kind {
	case reduceMax, reduceMin:
		return extremeFloat(kind == reduceMax, x, g)
	case reduceProd:
		return prodFloat(x, g)
	case reduceLogSumExp:
		return logSumExpFloat(x, g)
	}
	return sumFloat(kind, x, g)
}
