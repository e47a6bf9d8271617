package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []string{"Equal", "Less", "Greater"} {
		ops.Register(ops.Descriptor{Type: op, Since: 7, Fold: true}, compareBuilder(op))
	}
	for _, op := range []string{"LessOrEqual", "GreaterOrEqual"} {
		ops.Register(ops.Descriptor{Type: op, Since: 12, Fold: true}, compareBuilder(op))
	}
}

// compare is one of the five comparisons, named by its op type.
type compare struct{ op string }

func compareBuilder(op string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return compare{op: op}, nil
	}
}

func (c compare) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	t, err := compareTensors(oc, c.op, in[0], in[1])
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// compareTensors compares a and b elementwise with broadcasting into a
// BOOL tensor. Numbers compare by value (FP16 and BF16 through float32,
// so -0 equals +0 and NaN equals nothing); strings compare bytewise and
// only for Equal; booleans only for Equal. It stops with the request's
// error once the request ends.
func compareTensors(c *ops.Context, op string, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := ops.SameType(op, a, b); err != nil {
		return nil, err
	}
	var shape []int
	var r []bool
	var err error
	switch ad := a.Data.(type) {
	case []float32:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]float32), a.Shape, b.Shape)
	case []float64:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]float64), a.Shape, b.Shape)
	case []tensor.F16:
		shape, r, err = compareOrdered(c, op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape)
	case []tensor.BF16:
		shape, r, err = compareOrdered(c, op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape)
	case []int8:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]int8), a.Shape, b.Shape)
	case []uint8:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]uint8), a.Shape, b.Shape)
	case []int16:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]int16), a.Shape, b.Shape)
	case []uint16:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]uint16), a.Shape, b.Shape)
	case []int32:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]int32), a.Shape, b.Shape)
	case []uint32:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]uint32), a.Shape, b.Shape)
	case []int64:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]int64), a.Shape, b.Shape)
	case []uint64:
		shape, r, err = compareOrdered(c, op, ad, b.Data.([]uint64), a.Shape, b.Shape)
	case []string:
		if op != "Equal" {
			return nil, ops.InputErrorf("%s does not take %v", op, a.DType)
		}
		shape, r, err = elem.MapFunc(c, ad, b.Data.([]string), a.Shape, b.Shape, func(x, y string) bool { return x == y })
	case []bool:
		if op != "Equal" {
			return nil, ops.InputErrorf("%s does not take %v", op, a.DType)
		}
		shape, r, err = elem.MapFunc(c, ad, b.Data.([]bool), a.Shape, b.Shape, func(x, y bool) bool { return x == y })
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, a.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: shape, Data: r}, nil
}

func compareOrdered[T tensor.Numeric](c *ops.Context, op string, a, b []T, as, bs []int) ([]int, []bool, error) {
	var f func(x, y T) bool
	switch op {
	case "Equal":
		f = func(x, y T) bool { return x == y }
	case "Less":
		f = func(x, y T) bool { return x < y }
	case "Greater":
		f = func(x, y T) bool { return x > y }
	case "LessOrEqual":
		f = func(x, y T) bool { return x <= y }
	default: // GreaterOrEqual
		f = func(x, y T) bool { return x >= y }
	}
	return elem.MapFunc(c, a, b, as, bs, f)
}
