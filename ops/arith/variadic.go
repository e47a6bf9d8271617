package arith

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Before opset 8 Min, Max, Sum and Mean took operands of one shape;
// opset 8 made them broadcast. (Opset 1 versions differ from 6 only by
// the legacy consumed_inputs attribute, refused when present.)
// Min, Max, Sum and Mean are the operators, by opset range.
var (
	Min  = variadicOp("Min")
	Max  = variadicOp("Max")
	Sum  = variadicOp("Sum")
	Mean = variadicOp("Mean")
)

// variadicOp registers op before and from opset 8.
func variadicOp(op string) ops.Op {
	return ops.Op{
		ops.Register(ops.Descriptor{Type: op, Since: 1, Until: 7, Fold: true}, variadicBuilder(op, false)),
		ops.Register(ops.Descriptor{Type: op, Since: 8, Fold: true}, variadicBuilder(op, true)),
	}
}

// variadic folds Min, Max, Sum or Mean over one or more inputs; before
// opset 8 (broadcast false) the inputs must share one shape. Sum and
// Mean take floating-point types only.
type variadic struct {
	name       string
	op         binOp
	floatsOnly bool
	broadcast  bool
}

func variadicBuilder(name string, broadcast bool) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	v := &variadic{name: name, op: binOps[name], floatsOnly: name == "Sum" || name == "Mean", broadcast: broadcast}
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, math.MaxInt32, 1, 1); err != nil {
			return nil, err
		}
		return v, nil
	}
}

func (v *variadic) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	for i, t := range in {
		if t == nil {
			return nil, ops.InputErrorf("%s input %d is missing", v.name, i)
		}
	}
	if err := ops.SameType(v.name, in...); err != nil {
		return nil, err
	}
	if v.floatsOnly && !in[0].DType.IsFloat() {
		return nil, ops.InputErrorf("%s does not take %v", v.name, in[0].DType)
	}
	if !v.broadcast {
		for _, t := range in[1:] {
			if !ops.EqualShape(t.Shape, in[0].Shape) {
				return nil, ops.InputErrorf("%s operands have shapes %s and %s (broadcasting came at opset 8)", v.name, tensor.ShapeString(in[0].Shape), tensor.ShapeString(t.Shape))
			}
		}
	}
	half := in[0].DType == tensor.Float16 || in[0].DType == tensor.BFloat16
	acc := in[0]
	if half {
		acc = ops.HalfTo32(acc)
	}
	for _, t := range in[1:] {
		if half {
			t = ops.HalfTo32(t)
		}
		var err error
		if acc, err = compute(c, v.name, v.op, acc, t); err != nil {
			return nil, err
		}
	}
	if v.name == "Mean" && len(in) > 1 {
		if err := meanScale(c, acc, len(in)); err != nil {
			return nil, err
		}
	}
	if half {
		acc = ops.ToHalf(acc, in[0].DType)
	}
	return []*tensor.Tensor{acc}, nil
}

// meanScale divides a freshly computed sum by n in place.
func meanScale(c *ops.Context, t *tensor.Tensor, n int) error {
	switch d := t.Data.(type) {
	case []float32:
		k := float32(n)
		return c.InPieces(len(d), func(lo, hi int) {
			d := d[lo:hi]
			for i := range d {
				d[i] /= k
			}
		})
	case []float64:
		k := float64(n)
		return c.InPieces(len(d), func(lo, hi int) {
			d := d[lo:hi]
			for i := range d {
				d[i] /= k
			}
		})
	}
	return nil
}
