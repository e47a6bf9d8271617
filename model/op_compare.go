package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// Comparisons, logic and selection. Opset 7 brought numpy broadcasting to
// all of them (before it a broadcast attribute chose the old rules); later
// versions widened the types (Equal on strings from 19).
func init() {
	for _, op := range []string{"Equal", "Less", "Greater"} {
		register(Descriptor{Type: op, Since: 7, Fold: true}, compareBuilder(op))
	}
	for _, op := range []string{"LessOrEqual", "GreaterOrEqual"} {
		register(Descriptor{Type: op, Since: 12, Fold: true}, compareBuilder(op))
	}
	for _, op := range []string{"And", "Or", "Xor"} {
		register(Descriptor{Type: op, Since: 7, Fold: true}, logicBuilder(op))
	}
	register(Descriptor{Type: "Not", Since: 1, Fold: true}, buildNot)
	register(Descriptor{Type: "IsNaN", Since: 9, Fold: true}, buildIsNaN)
	register(Descriptor{Type: "IsInf", Since: 10, Fold: true}, buildIsInf)
	register(Descriptor{Type: "Where", Since: 9, Fold: true}, buildWhere)
}

// IsInfAttrs are IsInf's attributes.
type IsInfAttrs struct {
	DetectNegative bool `onnx:"detect_negative" default:"true"`
	DetectPositive bool `onnx:"detect_positive" default:"true"`
}

func compareBuilder(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			t, err := compareTensors(op, in[0], in[1])
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
}

// compareTensors compares a and b elementwise with broadcasting into a
// BOOL tensor. Numbers compare by value (FP16 and BF16 through float32,
// so -0 equals +0 and NaN equals nothing); strings compare bytewise and
// only for Equal; booleans only for Equal.
func compareTensors(op string, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := sameType(op, a, b); err != nil {
		return nil, err
	}
	var shape []int
	var r []bool
	var err error
	switch ad := a.Data.(type) {
	case []float32:
		shape, r, err = compareOrdered(op, ad, b.Data.([]float32), a.Shape, b.Shape)
	case []float64:
		shape, r, err = compareOrdered(op, ad, b.Data.([]float64), a.Shape, b.Shape)
	case []tensor.F16:
		shape, r, err = compareOrdered(op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape)
	case []tensor.BF16:
		shape, r, err = compareOrdered(op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape)
	case []int8:
		shape, r, err = compareOrdered(op, ad, b.Data.([]int8), a.Shape, b.Shape)
	case []uint8:
		shape, r, err = compareOrdered(op, ad, b.Data.([]uint8), a.Shape, b.Shape)
	case []int16:
		shape, r, err = compareOrdered(op, ad, b.Data.([]int16), a.Shape, b.Shape)
	case []uint16:
		shape, r, err = compareOrdered(op, ad, b.Data.([]uint16), a.Shape, b.Shape)
	case []int32:
		shape, r, err = compareOrdered(op, ad, b.Data.([]int32), a.Shape, b.Shape)
	case []uint32:
		shape, r, err = compareOrdered(op, ad, b.Data.([]uint32), a.Shape, b.Shape)
	case []int64:
		shape, r, err = compareOrdered(op, ad, b.Data.([]int64), a.Shape, b.Shape)
	case []uint64:
		shape, r, err = compareOrdered(op, ad, b.Data.([]uint64), a.Shape, b.Shape)
	case []string:
		if op != "Equal" {
			return nil, inputErrorf("%s does not take %v", op, a.DType)
		}
		shape, r, err = elemMapFunc(ad, b.Data.([]string), a.Shape, b.Shape, func(x, y string) bool { return x == y })
	case []bool:
		if op != "Equal" {
			return nil, inputErrorf("%s does not take %v", op, a.DType)
		}
		shape, r, err = elemMapFunc(ad, b.Data.([]bool), a.Shape, b.Shape, func(x, y bool) bool { return x == y })
	default:
		return nil, inputErrorf("%s does not take %v", op, a.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: shape, Data: r}, nil
}

func compareOrdered[T tensor.Numeric](op string, a, b []T, as, bs []int) ([]int, []bool, error) {
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
	return elemMapFunc(a, b, as, bs, f)
}

func logicBuilder(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	var f func(x, y bool) bool
	switch op {
	case "And":
		f = func(x, y bool) bool { return x && y }
	case "Or":
		f = func(x, y bool) bool { return x || y }
	default: // Xor
		f = func(x, y bool) bool { return x != y }
	}
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			a, ok1 := in[0].Data.([]bool)
			b, ok2 := in[1].Data.([]bool)
			if !ok1 || !ok2 {
				return nil, inputErrorf("%s takes BOOL operands, got %v and %v", op, in[0].DType, in[1].DType)
			}
			shape, r, err := elemMapFunc(a, b, in[0].Shape, in[1].Shape, f)
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{{DType: tensor.Bool, Shape: shape, Data: r}}, nil
		}, nil
	}
}

func buildNot(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		d, ok := x.Data.([]bool)
		if !ok {
			return nil, inputErrorf("Not takes BOOL, got %v", x.DType)
		}
		r := make([]bool, len(d))
		for i, v := range d {
			r[i] = !v
		}
		return &tensor.Tensor{DType: tensor.Bool, Shape: x.Shape, Data: r}, nil
	}), nil
}

func buildIsNaN(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatPredicate("IsNaN", x, func(v float64) bool { return v != v })
	}), nil
}

func buildIsInf(n *node, at *IsInfAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	neg, pos := at.DetectNegative, at.DetectPositive
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatPredicate("IsInf", x, func(v float64) bool {
			return pos && math.IsInf(v, 1) || neg && math.IsInf(v, -1)
		})
	}), nil
}

// floatPredicate maps a floating-point tensor to BOOL through f.
func floatPredicate(op string, x *tensor.Tensor, f func(float64) bool) (*tensor.Tensor, error) {
	if !x.DType.IsFloat() {
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	var r []bool
	switch d := x.Data.(type) {
	case []float32:
		r = make([]bool, len(d))
		for i, v := range d {
			r[i] = f(float64(v))
		}
	default: // float64, FP16, BF16: widening is exact
		r = make([]bool, x.Len())
		for i, v := range x.Float64s() {
			r[i] = f(v)
		}
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: x.Shape, Data: r}, nil
}

// buildWhere implements Where: condition ? X : Y, the three broadcasting
// together; X and Y may be of any one type.
func buildWhere(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		c, x, y := in[0], in[1], in[2]
		cond, ok := c.Data.([]bool)
		if !ok {
			return nil, inputErrorf("Where's condition must be BOOL, got %v", c.DType)
		}
		if err := sameType("Where", x, y); err != nil {
			return nil, err
		}
		l, err := newElemLayout(c.Shape, x.Shape, y.Shape)
		if err != nil {
			return nil, err
		}
		var out any
		switch xd := x.Data.(type) {
		case []float32:
			out = where(l, cond, xd, y.Data.([]float32))
		case []float64:
			out = where(l, cond, xd, y.Data.([]float64))
		case []int8:
			out = where(l, cond, xd, y.Data.([]int8))
		case []uint8:
			out = where(l, cond, xd, y.Data.([]uint8))
		case []int16:
			out = where(l, cond, xd, y.Data.([]int16))
		case []uint16:
			out = where(l, cond, xd, y.Data.([]uint16))
		case []int32:
			out = where(l, cond, xd, y.Data.([]int32))
		case []uint32:
			out = where(l, cond, xd, y.Data.([]uint32))
		case []int64:
			out = where(l, cond, xd, y.Data.([]int64))
		case []uint64:
			out = where(l, cond, xd, y.Data.([]uint64))
		case []bool:
			out = where(l, cond, xd, y.Data.([]bool))
		case []tensor.F16:
			out = where(l, cond, xd, y.Data.([]tensor.F16))
		case []tensor.BF16:
			out = where(l, cond, xd, y.Data.([]tensor.BF16))
		case []string:
			out = where(l, cond, xd, y.Data.([]string))
		default:
			return nil, inputErrorf("Where does not take %v", x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: l.shape, Data: out}}, nil
	}, nil
}

func where[T tensor.Elem](l *elemLayout, c []bool, x, y []T) []T {
	r := make([]T, l.n)
	run, ic, ix, iy := l.run(), l.inc(1), l.inc(2), l.inc(3)
	l.each(func(offs []int) {
		out := r[offs[0] : offs[0]+run]
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
	return r
}
