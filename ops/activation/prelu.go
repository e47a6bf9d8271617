package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

// PRelu is the PRelu operator.
var PRelu = ops.Op{
	ops.Register(ops.Descriptor{Type: "PRelu", Since: 7, Fold: true}, buildPRelu),
}

// prelu implements PRelu from opset 7: slope broadcasts to X's shape
// (unidirectionally); y = x for x >= 0, slope·x below.
type prelu struct{}

func buildPRelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return prelu{}, nil
}

func (prelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, s := in[0], in[1]
	if err := ops.SameType("PRelu", x, s); err != nil {
		return nil, err
	}
	if bs, err := ops.BroadcastShape(x.Shape, s.Shape); err != nil || !ops.EqualShape(bs, x.Shape) {
		return nil, ops.InputErrorf("PRelu slope of shape %s does not broadcast to the input's %s", tensor.ShapeString(s.Shape), tensor.ShapeString(x.Shape))
	}
	var t *tensor.Tensor
	var err error
	switch xd := x.Data.(type) {
	case []float32:
		t, err = preluOf(c, xd, s.Data.([]float32), x.Shape, s.Shape)
	case []float64:
		t, err = preluOf(c, xd, s.Data.([]float64), x.Shape, s.Shape)
	case []tensor.F16:
		t, err = preluOf(c, tensor.HalfToFloat32(xd), tensor.HalfToFloat32(s.Data.([]tensor.F16)), x.Shape, s.Shape)
		t = ops.ToHalf(t, tensor.Float16)
	case []tensor.BF16:
		t, err = preluOf(c, tensor.HalfToFloat32(xd), tensor.HalfToFloat32(s.Data.([]tensor.BF16)), x.Shape, s.Shape)
		t = ops.ToHalf(t, tensor.BFloat16)
	case []int8:
		t, err = preluOf(c, xd, s.Data.([]int8), x.Shape, s.Shape)
	case []int16:
		t, err = preluOf(c, xd, s.Data.([]int16), x.Shape, s.Shape)
	case []int32:
		t, err = preluOf(c, xd, s.Data.([]int32), x.Shape, s.Shape)
	case []int64:
		t, err = preluOf(c, xd, s.Data.([]int64), x.Shape, s.Shape)
	case []uint8:
		t, err = preluOf(c, xd, s.Data.([]uint8), x.Shape, s.Shape)
	case []uint16:
		t, err = preluOf(c, xd, s.Data.([]uint16), x.Shape, s.Shape)
	case []uint32:
		t, err = preluOf(c, xd, s.Data.([]uint32), x.Shape, s.Shape)
	case []uint64:
		t, err = preluOf(c, xd, s.Data.([]uint64), x.Shape, s.Shape)
	default:
		return nil, ops.InputErrorf("PRelu does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

func preluOf[T tensor.Numeric](c *ops.Context, x, s []T, xs, ss []int) (*tensor.Tensor, error) {
	shape, r, err := elem.Map2(c, x, s, xs, ss, func(r, x, s []T, ix, is int) {
		n := len(r)
		switch {
		case ix == 1 && is == 1:
			x, s := x[:n], s[:n]
			for i, v := range x {
				if v < 0 {
					v *= s[i]
				}
				r[i] = v
			}
		case ix == 1: // one slope for the run (per channel, or a scalar)
			x, a := x[:n], s[0]
			for i, v := range x {
				if v < 0 {
					v *= a
				}
				r[i] = v
			}
		default: // x broadcast: cannot happen (slope broadcasts to x), kept total
			pa, pb := 0, 0
			for i := range r {
				v := x[pa]
				if v < 0 {
					v *= s[pb]
				}
				r[i] = v
				pa += ix
				pb += is
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}
