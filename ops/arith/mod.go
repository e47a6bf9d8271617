package arith

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Mod", Since: 10, Fold: true}, buildMod)
}

// ModAttrs are Mod's attributes.
type ModAttrs struct {
	Fmod bool `onnx:"fmod"`
}

// mod implements Mod: with fmod the remainder takes the dividend's sign
// (C's fmod, Go's %); without, the divisor's (numpy's mod, also for
// floating-point types, as ONNX's reference computes). Integer division
// by zero is an input error.
type mod struct{ fmod bool }

func buildMod(n *ops.Node, at *ModAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return mod{fmod: at.Fmod}, nil
}

func (m mod) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b := in[0], in[1]
	if err := ops.SameType("Mod", a, b); err != nil {
		return nil, err
	}
	fmod := m.fmod
	var t *tensor.Tensor
	var err error
	switch ad := a.Data.(type) {
	case []float32:
		t, err = modFloat(c, ad, b.Data.([]float32), a.Shape, b.Shape, fmod)
	case []float64:
		t, err = modFloat(c, ad, b.Data.([]float64), a.Shape, b.Shape, fmod)
	case []tensor.F16:
		t, err = modFloat(c, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape, fmod)
		t = ops.ToHalf(t, tensor.Float16)
	case []tensor.BF16:
		t, err = modFloat(c, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape, fmod)
		t = ops.ToHalf(t, tensor.BFloat16)
	case []int8:
		t, err = modInt(c, ad, b.Data.([]int8), a.Shape, b.Shape, fmod)
	case []uint8:
		t, err = modInt(c, ad, b.Data.([]uint8), a.Shape, b.Shape, fmod)
	case []int16:
		t, err = modInt(c, ad, b.Data.([]int16), a.Shape, b.Shape, fmod)
	case []uint16:
		t, err = modInt(c, ad, b.Data.([]uint16), a.Shape, b.Shape, fmod)
	case []int32:
		t, err = modInt(c, ad, b.Data.([]int32), a.Shape, b.Shape, fmod)
	case []uint32:
		t, err = modInt(c, ad, b.Data.([]uint32), a.Shape, b.Shape, fmod)
	case []int64:
		t, err = modInt(c, ad, b.Data.([]int64), a.Shape, b.Shape, fmod)
	case []uint64:
		t, err = modInt(c, ad, b.Data.([]uint64), a.Shape, b.Shape, fmod)
	default:
		return nil, ops.InputErrorf("Mod does not take %v", a.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

func modFloat[T tensor.Float](c *ops.Context, a, b []T, as, bs []int, fmod bool) (*tensor.Tensor, error) {
	shape, r, err := elem.MapFunc(c, a, b, as, bs, func(x, y T) T {
		m := math.Mod(float64(x), float64(y))
		if !fmod {
			switch {
			case m != 0 && (m < 0) != (y < 0):
				m += float64(y)
			case m == 0:
				m = math.Copysign(0, float64(y))
			}
		}
		return T(m)
	})
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

func modInt[T tensor.Integer](c *ops.Context, a, b []T, as, bs []int, fmod bool) (*tensor.Tensor, error) {
	if err := checkDivisors(c, b, "Mod: integer division by zero"); err != nil {
		return nil, err
	}
	shape, r, err := elem.MapFunc(c, a, b, as, bs, func(x, y T) T {
		m := x % y
		if !fmod && m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return m
	})
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}
