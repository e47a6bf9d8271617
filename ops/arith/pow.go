package arith

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

// Pow is the Pow operator.
var Pow = ops.Op{
	ops.Register(ops.Descriptor{Type: "Pow", Since: 7, Fold: true}, buildPow),
}

// pow implements Pow: the base's type is the result's; from opset 12 the
// exponent may have another numeric type. Integer powers of integers are
// exact (wrapping like numpy); everything else is computed in float64
// and converted to the base's type.
type pow struct{}

func buildPow(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return pow{}, nil
}

func (pow) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, y := in[0], in[1]
	if y.DType == tensor.Bool || y.DType == tensor.String {
		return nil, ops.InputErrorf("Pow does not take a %v exponent", y.DType)
	}
	var t *tensor.Tensor
	var err error
	switch xd := x.Data.(type) {
	case []float32:
		t, err = powFloat32(c, xd, x.Shape, y)
	case []float64:
		t, err = powFloat(c, xd, x.Shape, y)
	case []tensor.F16:
		t, err = powFloat32(c, tensor.HalfToFloat32(xd), x.Shape, y)
		t = ops.ToHalf(t, tensor.Float16)
	case []tensor.BF16:
		t, err = powFloat32(c, tensor.HalfToFloat32(xd), x.Shape, y)
		t = ops.ToHalf(t, tensor.BFloat16)
	case []int8:
		t, err = powInt(c, xd, x.Shape, y)
	case []uint8:
		t, err = powInt(c, xd, x.Shape, y)
	case []int16:
		t, err = powInt(c, xd, x.Shape, y)
	case []uint16:
		t, err = powInt(c, xd, x.Shape, y)
	case []int32:
		t, err = powInt(c, xd, x.Shape, y)
	case []uint32:
		t, err = powInt(c, xd, x.Shape, y)
	case []int64:
		t, err = powInt(c, xd, x.Shape, y)
	case []uint64:
		t, err = powInt(c, xd, x.Shape, y)
	default:
		return nil, ops.InputErrorf("Pow does not take a %v base", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

// powFloat32 serves float32 bases (and half ones widened): a scalar
// exponent of 2 or 0.5 (variance and norms) runs as x·x or a square root.
func powFloat32(c *ops.Context, x []float32, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	if y.Len() == 1 && y.DType.IsFloat() && len(y.Shape) <= len(xs) {
		shape := xs
		if len(y.Shape) == len(xs) {
			shape = broadcastOrSelf(xs, y.Shape)
		}
		if ops.EqualShape(shape, xs) {
			switch e := y.Float64s()[0]; e {
			case 2:
				r := make([]float32, len(x))
				err := c.InPieces(len(x), func(lo, hi int) {
					dst, src := r[lo:hi], x[lo:hi]
					for i, v := range src {
						dst[i] = v * v
					}
				})
				if err != nil {
					return nil, err
				}
				return &tensor.Tensor{DType: tensor.Float32, Shape: xs, Data: r}, nil
			case 0.5:
				r := make([]float32, len(x))
				err := c.InPieces(len(x), func(lo, hi int) {
					dst, src := r[lo:hi], x[lo:hi]
					for i, v := range src {
						// sqrt except where pow differs: pow(±0, 0.5) = +0, pow(-Inf, 0.5) = +Inf
						switch {
						case v == 0:
							dst[i] = 0
						case math.IsInf(float64(v), -1):
							dst[i] = float32(math.Inf(1))
						default:
							dst[i] = float32(math.Sqrt(float64(v)))
						}
					}
				})
				if err != nil {
					return nil, err
				}
				return &tensor.Tensor{DType: tensor.Float32, Shape: xs, Data: r}, nil
			}
		}
	}
	return powFloat(c, x, xs, y)
}

// broadcastOrSelf returns the broadcast of a and b, or a when they do not
// broadcast (the general path reports that).
func broadcastOrSelf(a, b []int) []int {
	s, err := ops.BroadcastShape(a, b)
	if err != nil {
		return a
	}
	return s
}

func powFloat[T tensor.Float](c *ops.Context, x []T, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	e := y.Float64s()
	shape, r, err := elem.MapFunc(c, x, e, xs, y.Shape, func(b T, p float64) T { return T(math.Pow(float64(b), p)) })
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

func powInt[T tensor.Integer](c *ops.Context, x []T, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	var shape []int
	var r []T
	var err error
	if y.DType.IsInteger() {
		e, ierr := y.Int64s()
		if ierr != nil { // a uint64 exponent beyond int64: every such power wraps alike
			u := y.Data.([]uint64)
			e = make([]int64, len(u))
			for i, v := range u {
				e[i] = int64(v)
			}
		}
		shape, r, err = elem.MapFunc(c, x, e, xs, y.Shape, intPow[T])
	} else {
		e := y.Float64s()
		shape, r, err = elem.MapFunc(c, x, e, xs, y.Shape, func(b T, p float64) T { return T(math.Pow(float64(b), p)) })
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// intPow is b**e in b's type, wrapping on overflow. A negative exponent
// gives the truncated 1/b**|e|: b for b = ±1 (sign by parity), else 0.
func intPow[T tensor.Integer](b T, e int64) T {
	if e < 0 {
		switch {
		case b == 1:
			return 1
		case b == 0:
			return 0 // 1/0: as C's pow(0, -n) = Inf converted, implementation-defined; 0 here
		case tensor.DTypeOf[T]().IsSigned() && b == ^T(0): // -1
			if e%2 == 0 {
				return 1
			}
			return b
		}
		return 0
	}
	r := T(1)
	for e > 0 {
		if e&1 == 1 {
			r *= b
		}
		b *= b
		e >>= 1
	}
	return r
}
