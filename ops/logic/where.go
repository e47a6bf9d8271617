package logic

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

// Where is the Where operator.
var Where = ops.Op{
	ops.Register(ops.Descriptor{Type: "Where", Since: 9, Fold: true}, buildWhere),
}

// where implements Where: condition ? X : Y, the three broadcasting
// together; X and Y may be of any one type.
type where struct{}

func buildWhere(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return where{}, nil
}

func (where) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	c, x, y := in[0], in[1], in[2]
	cond, ok := c.Data.([]bool)
	if !ok {
		return nil, ops.InputErrorf("Where's condition must be BOOL, got %v", c.DType)
	}
	if err := ops.SameType("Where", x, y); err != nil {
		return nil, err
	}
	l, err := elem.NewLayout(c.Shape, x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	var out any
	switch xd := x.Data.(type) {
	case []float32:
		out, err = choose(oc, l, cond, xd, y.Data.([]float32))
	case []float64:
		out, err = choose(oc, l, cond, xd, y.Data.([]float64))
	case []int8:
		out, err = choose(oc, l, cond, xd, y.Data.([]int8))
	case []uint8:
		out, err = choose(oc, l, cond, xd, y.Data.([]uint8))
	case []int16:
		out, err = choose(oc, l, cond, xd, y.Data.([]int16))
	case []uint16:
		out, err = choose(oc, l, cond, xd, y.Data.([]uint16))
	case []int32:
		out, err = choose(oc, l, cond, xd, y.Data.([]int32))
	case []uint32:
		out, err = choose(oc, l, cond, xd, y.Data.([]uint32))
	case []int64:
		out, err = choose(oc, l, cond, xd, y.Data.([]int64))
	case []uint64:
		out, err = choose(oc, l, cond, xd, y.Data.([]uint64))
	case []bool:
		out, err = choose(oc, l, cond, xd, y.Data.([]bool))
	case []tensor.F16:
		out, err = choose(oc, l, cond, xd, y.Data.([]tensor.F16))
	case []tensor.BF16:
		out, err = choose(oc, l, cond, xd, y.Data.([]tensor.BF16))
	case []string:
		out, err = choose(oc, l, cond, xd, y.Data.([]string))
	default:
		return nil, ops.InputErrorf("Where does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: l.Shape(), Data: out}}, nil
}

// choose computes c ? x : y over l's runs (operands: c, x, y), piece by
// piece under the request.
func choose[T tensor.Elem](oc *ops.Context, l *elem.Layout, c []bool, x, y []T) ([]T, error) {
	if err := oc.ReserveTensor(tensor.DTypeOf[T](), l.Shape()); err != nil {
		return nil, err
	}
	r := make([]T, l.Len())
	ic, ix, iy := l.Inc(1), l.Inc(2), l.Inc(3)
	err := elem.Walk(oc, l, func(offs []int, n int) {
		out := r[offs[0] : offs[0]+n]
		pc, px, py := offs[1], offs[2], offs[3]
		for i := range out {
			if c[pc] {
				out[i] = x[px]
			} else {
				out[i] = y[py]
			}
			pc += ic
			px += ix
			py += iy
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
