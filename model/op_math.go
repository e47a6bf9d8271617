package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		register(Descriptor{Type: op, Since: 7, Fold: true}, arithBuilder(op))
	}
	// Before opset 8 Min, Max, Sum and Mean took operands of one shape;
	// opset 8 made them broadcast. (Opset 1 versions differ from 6 only by
	// the legacy consumed_inputs attribute, refused when present, as for
	// the unary functions below.)
	for _, op := range []string{"Min", "Max", "Sum", "Mean"} {
		register(Descriptor{Type: op, Since: 1, Until: 7, Fold: true}, variadicBuilder(op, false))
		register(Descriptor{Type: op, Since: 8, Fold: true}, variadicBuilder(op, true))
	}
	register(Descriptor{Type: "Pow", Since: 7, Fold: true}, buildPow)
	register(Descriptor{Type: "Mod", Since: 10, Fold: true}, buildMod)
	register(Descriptor{Type: "BitShift", Since: 11, Fold: true}, buildBitShift)
	for _, op := range []string{"BitwiseAnd", "BitwiseOr", "BitwiseXor"} {
		register(Descriptor{Type: op, Since: 18, Fold: true}, bitwiseBuilder(op))
	}
	register(Descriptor{Type: "BitwiseNot", Since: 18, Fold: true}, unaryMathBuilder(elemBitNot))
	for _, u := range []struct {
		op    elemUnaryOp
		since int64
	}{
		{elemAbs, 1}, {elemNeg, 1}, {elemSign, 9}, {elemSqrt, 1}, {elemExp, 1}, {elemLog, 1},
		{elemReciprocal, 1}, {elemCeil, 1}, {elemFloor, 1}, {elemRound, 11},
		{elemSin, 7}, {elemCos, 7}, {elemTan, 7}, {elemAsin, 7}, {elemAcos, 7}, {elemAtan, 7},
		{elemSinh, 9}, {elemCosh, 9}, {elemAsinh, 9}, {elemAcosh, 9}, {elemAtanh, 9}, {elemErf, 9},
	} {
		register(Descriptor{Type: elemUnaryNames[u.op], Since: u.since, Fold: true}, unaryMathBuilder(u.op))
	}
}

// --- broadcasting walk -------------------------------------------------

// The walk over operands that broadcast together is package elem's;
// elemMap2 is elem.Map2 under the name PRelu uses.
func elemMap2[A, B, R tensor.Elem](a []A, b []B, as, bs []int, kernel func(r []R, a []A, b []B, ia, ib int)) ([]int, []R, error) {
	return elem.Map2(a, b, as, bs, kernel)
}

// --- Add, Sub, Mul, Div, Min, Max --------------------------------------

type elemBinaryOp uint8

const (
	elemAdd elemBinaryOp = iota
	elemSub
	elemMul
	elemDiv
	elemMin
	elemMax
)

var elemBinaryOps = map[string]elemBinaryOp{"Add": elemAdd, "Sub": elemSub, "Mul": elemMul, "Div": elemDiv, "Min": elemMin, "Max": elemMax, "Sum": elemAdd, "Mean": elemAdd}

func arithBuilder(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	code := elemBinaryOps[op]
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			t, err := elemBinary(op, code, in[0], in[1])
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
}

// elemBinary computes a op b with broadcasting on any numeric type; FP16
// and BF16 compute in float32 and round once.
func elemBinary(name string, op elemBinaryOp, a, b *tensor.Tensor) (*tensor.Tensor, error) {
	if err := sameType(name, a, b); err != nil {
		return nil, err
	}
	switch ad := a.Data.(type) {
	case []float32:
		return elemArith(op, ad, b.Data.([]float32), a.Shape, b.Shape)
	case []float64:
		return elemArith(op, ad, b.Data.([]float64), a.Shape, b.Shape)
	case []int8:
		return elemArith(op, ad, b.Data.([]int8), a.Shape, b.Shape)
	case []uint8:
		return elemArith(op, ad, b.Data.([]uint8), a.Shape, b.Shape)
	case []int16:
		return elemArith(op, ad, b.Data.([]int16), a.Shape, b.Shape)
	case []uint16:
		return elemArith(op, ad, b.Data.([]uint16), a.Shape, b.Shape)
	case []int32:
		return elemArith(op, ad, b.Data.([]int32), a.Shape, b.Shape)
	case []uint32:
		return elemArith(op, ad, b.Data.([]uint32), a.Shape, b.Shape)
	case []int64:
		return elemArith(op, ad, b.Data.([]int64), a.Shape, b.Shape)
	case []uint64:
		return elemArith(op, ad, b.Data.([]uint64), a.Shape, b.Shape)
	case []tensor.F16:
		t, err := elemArith(op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape)
		return elemToHalf(t, tensor.Float16), err
	case []tensor.BF16:
		t, err := elemArith(op, tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape)
		return elemToHalf(t, tensor.BFloat16), err
	}
	return nil, inputErrorf("%s does not take %v", name, a.DType)
}

func elemArith[T tensor.Numeric](op elemBinaryOp, a, b []T, as, bs []int) (*tensor.Tensor, error) {
	if op == elemDiv && !tensor.DTypeOf[T]().IsFloat() {
		for _, v := range b {
			if v == 0 {
				return nil, inputErrorf("integer division by zero")
			}
		}
	}
	shape, r, err := elem.Map2(a, b, as, bs, func(r, a, b []T, ia, ib int) { elemArithRun(op, r, a, b, ia, ib) })
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// elemArithRun computes one run: r[i] = a[i·ia] op b[i·ib], each case a
// plain loop over the slices.
func elemArithRun[T tensor.Numeric](op elemBinaryOp, r, a, b []T, ia, ib int) {
	n := len(r)
	switch {
	case ia == 1 && ib == 1:
		a, b := a[:n], b[:n]
		switch op {
		case elemAdd:
			for i := range r {
				r[i] = a[i] + b[i]
			}
		case elemSub:
			for i := range r {
				r[i] = a[i] - b[i]
			}
		case elemMul:
			for i := range r {
				r[i] = a[i] * b[i]
			}
		case elemDiv:
			for i := range r {
				r[i] = a[i] / b[i]
			}
		case elemMin:
			for i := range r {
				r[i] = min(a[i], b[i])
			}
		case elemMax:
			for i := range r {
				r[i] = max(a[i], b[i])
			}
		}
	case ia == 1:
		a, y := a[:n], b[0]
		switch op {
		case elemAdd:
			for i := range r {
				r[i] = a[i] + y
			}
		case elemSub:
			for i := range r {
				r[i] = a[i] - y
			}
		case elemMul:
			for i := range r {
				r[i] = a[i] * y
			}
		case elemDiv:
			for i := range r {
				r[i] = a[i] / y
			}
		case elemMin:
			for i := range r {
				r[i] = min(a[i], y)
			}
		case elemMax:
			for i := range r {
				r[i] = max(a[i], y)
			}
		}
	case ib == 1:
		x, b := a[0], b[:n]
		switch op {
		case elemAdd:
			for i := range r {
				r[i] = x + b[i]
			}
		case elemSub:
			for i := range r {
				r[i] = x - b[i]
			}
		case elemMul:
			for i := range r {
				r[i] = x * b[i]
			}
		case elemDiv:
			for i := range r {
				r[i] = x / b[i]
			}
		case elemMin:
			for i := range r {
				r[i] = min(x, b[i])
			}
		case elemMax:
			for i := range r {
				r[i] = max(x, b[i])
			}
		}
	default:
		var v T
		one := []T{0}
		elemArithRun(op, one, a[:1], b[:1], 1, 1)
		v = one[0]
		for i := range r {
			r[i] = v
		}
	}
}

// --- Min, Max, Sum, Mean -----------------------------------------------

// variadicBuilder folds Min, Max, Sum or Mean over one or more inputs;
// before opset 8 the inputs must share one shape.
func variadicBuilder(op string, broadcast bool) func(n *node, _ *noAttrs) (opFunc, error) {
	code := elemBinaryOps[op]
	floatsOnly := op == "Sum" || op == "Mean"
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(1, math.MaxInt32, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			for i, t := range in {
				if t == nil {
					return nil, inputErrorf("%s input %d is missing", op, i)
				}
			}
			if err := sameType(op, in...); err != nil {
				return nil, err
			}
			if floatsOnly && !in[0].DType.IsFloat() {
				return nil, inputErrorf("%s does not take %v", op, in[0].DType)
			}
			if !broadcast {
				for _, t := range in[1:] {
					if !equalShape(t.Shape, in[0].Shape) {
						return nil, inputErrorf("%s operands have shapes %s and %s (broadcasting came at opset 8)", op, tensor.ShapeString(in[0].Shape), tensor.ShapeString(t.Shape))
					}
				}
			}
			half := in[0].DType == tensor.Float16 || in[0].DType == tensor.BFloat16
			acc := in[0]
			if half {
				acc = elemHalfTo32(acc)
			}
			for _, t := range in[1:] {
				if half {
					t = elemHalfTo32(t)
				}
				var err error
				if acc, err = elemBinary(op, code, acc, t); err != nil {
					return nil, err
				}
			}
			if op == "Mean" && len(in) > 1 {
				acc = elemMeanScale(acc, len(in))
			}
			if half {
				acc = elemToHalf(acc, in[0].DType)
			}
			return []*tensor.Tensor{acc}, nil
		}, nil
	}
}

// elemMeanScale divides a freshly computed sum by n in place.
func elemMeanScale(t *tensor.Tensor, n int) *tensor.Tensor {
	switch d := t.Data.(type) {
	case []float32:
		k := float32(n)
		for i := range d {
			d[i] /= k
		}
	case []float64:
		k := float64(n)
		for i := range d {
			d[i] /= k
		}
	}
	return t
}

// --- Pow ---------------------------------------------------------------

// buildPow implements Pow: the base's type is the result's; from opset 12
// the exponent may have another numeric type. Integer powers of integers
// are exact (wrapping like numpy); everything else is computed in float64
// and converted to the base's type.
func buildPow(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, y := in[0], in[1]
		if y.DType == tensor.Bool || y.DType == tensor.String {
			return nil, inputErrorf("Pow does not take a %v exponent", y.DType)
		}
		var t *tensor.Tensor
		var err error
		switch xd := x.Data.(type) {
		case []float32:
			t, err = powFloat32(xd, x.Shape, y)
		case []float64:
			t, err = powFloat(xd, x.Shape, y)
		case []tensor.F16:
			t, err = powFloat32(tensor.HalfToFloat32(xd), x.Shape, y)
			t = elemToHalf(t, tensor.Float16)
		case []tensor.BF16:
			t, err = powFloat32(tensor.HalfToFloat32(xd), x.Shape, y)
			t = elemToHalf(t, tensor.BFloat16)
		case []int8:
			t, err = powInt(xd, x.Shape, y)
		case []uint8:
			t, err = powInt(xd, x.Shape, y)
		case []int16:
			t, err = powInt(xd, x.Shape, y)
		case []uint16:
			t, err = powInt(xd, x.Shape, y)
		case []int32:
			t, err = powInt(xd, x.Shape, y)
		case []uint32:
			t, err = powInt(xd, x.Shape, y)
		case []int64:
			t, err = powInt(xd, x.Shape, y)
		case []uint64:
			t, err = powInt(xd, x.Shape, y)
		default:
			return nil, inputErrorf("Pow does not take a %v base", x.DType)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

// powFloat32 serves float32 bases (and half ones widened): a scalar
// exponent of 2 or 0.5 (variance and norms) runs as x·x or a square root.
func powFloat32(x []float32, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	if y.Len() == 1 && y.DType.IsFloat() && len(y.Shape) <= len(xs) {
		shape := xs
		if len(y.Shape) == len(xs) {
			shape = broadcastOrSelf(xs, y.Shape)
		}
		if equalShape(shape, xs) {
			switch e := y.Float64s()[0]; e {
			case 2:
				r := make([]float32, len(x))
				for i, v := range x {
					r[i] = v * v
				}
				return &tensor.Tensor{DType: tensor.Float32, Shape: xs, Data: r}, nil
			case 0.5:
				r := make([]float32, len(x))
				for i, v := range x {
					// sqrt except where pow differs: pow(±0, 0.5) = +0, pow(-Inf, 0.5) = +Inf
					switch {
					case v == 0:
						r[i] = 0
					case math.IsInf(float64(v), -1):
						r[i] = float32(math.Inf(1))
					default:
						r[i] = float32(math.Sqrt(float64(v)))
					}
				}
				return &tensor.Tensor{DType: tensor.Float32, Shape: xs, Data: r}, nil
			}
		}
	}
	return powFloat(x, xs, y)
}

// broadcastOrSelf returns the broadcast of a and b, or a when they do not
// broadcast (the general path reports that).
func broadcastOrSelf(a, b []int) []int {
	s, err := broadcastShape(a, b)
	if err != nil {
		return a
	}
	return s
}

func powFloat[T tensor.Float](x []T, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	e := y.Float64s()
	shape, r, err := elem.MapFunc(x, e, xs, y.Shape, func(b T, p float64) T { return T(math.Pow(float64(b), p)) })
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

func powInt[T tensor.Integer](x []T, xs []int, y *tensor.Tensor) (*tensor.Tensor, error) {
	var shape []int
	var r []T
	var err error
	if y.DType.IsInteger() {
		e, ierr := y.Int64s()
		if ierr != nil { // a uint64 exponent beyond int64: every such power wraps alike
			e = convert[int64](y.Data.([]uint64))
		}
		shape, r, err = elem.MapFunc(x, e, xs, y.Shape, intPow[T])
	} else {
		e := y.Float64s()
		shape, r, err = elem.MapFunc(x, e, xs, y.Shape, func(b T, p float64) T { return T(math.Pow(float64(b), p)) })
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

// --- Mod ---------------------------------------------------------------

// ModAttrs are Mod's attributes.
type ModAttrs struct {
	Fmod bool `onnx:"fmod"`
}

// buildMod implements Mod: with fmod the remainder takes the dividend's
// sign (C's fmod, Go's %); without, the divisor's (numpy's mod, also for
// floating-point types, as ONNX's reference computes). Integer division
// by zero is an input error.
func buildMod(n *node, at *ModAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	fmod := at.Fmod
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, b := in[0], in[1]
		if err := sameType("Mod", a, b); err != nil {
			return nil, err
		}
		var t *tensor.Tensor
		var err error
		switch ad := a.Data.(type) {
		case []float32:
			t, err = modFloat(ad, b.Data.([]float32), a.Shape, b.Shape, fmod)
		case []float64:
			t, err = modFloat(ad, b.Data.([]float64), a.Shape, b.Shape, fmod)
		case []tensor.F16:
			t, err = modFloat(tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.F16)), a.Shape, b.Shape, fmod)
			t = elemToHalf(t, tensor.Float16)
		case []tensor.BF16:
			t, err = modFloat(tensor.HalfToFloat32(ad), tensor.HalfToFloat32(b.Data.([]tensor.BF16)), a.Shape, b.Shape, fmod)
			t = elemToHalf(t, tensor.BFloat16)
		case []int8:
			t, err = modInt(ad, b.Data.([]int8), a.Shape, b.Shape, fmod)
		case []uint8:
			t, err = modInt(ad, b.Data.([]uint8), a.Shape, b.Shape, fmod)
		case []int16:
			t, err = modInt(ad, b.Data.([]int16), a.Shape, b.Shape, fmod)
		case []uint16:
			t, err = modInt(ad, b.Data.([]uint16), a.Shape, b.Shape, fmod)
		case []int32:
			t, err = modInt(ad, b.Data.([]int32), a.Shape, b.Shape, fmod)
		case []uint32:
			t, err = modInt(ad, b.Data.([]uint32), a.Shape, b.Shape, fmod)
		case []int64:
			t, err = modInt(ad, b.Data.([]int64), a.Shape, b.Shape, fmod)
		case []uint64:
			t, err = modInt(ad, b.Data.([]uint64), a.Shape, b.Shape, fmod)
		default:
			return nil, inputErrorf("Mod does not take %v", a.DType)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func modFloat[T tensor.Float](a, b []T, as, bs []int, fmod bool) (*tensor.Tensor, error) {
	shape, r, err := elem.MapFunc(a, b, as, bs, func(x, y T) T {
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

func modInt[T tensor.Integer](a, b []T, as, bs []int, fmod bool) (*tensor.Tensor, error) {
	for _, v := range b {
		if v == 0 {
			return nil, inputErrorf("Mod: integer division by zero")
		}
	}
	shape, r, err := elem.MapFunc(a, b, as, bs, func(x, y T) T {
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

// --- BitShift and the bitwise operators ---------------------------------

// BitShiftAttrs are BitShift's attributes.
type BitShiftAttrs struct {
	Direction string `onnx:"direction"`
}

// buildBitShift shifts unsigned integers; shifting by the width or more
// gives 0.
func buildBitShift(n *node, at *BitShiftAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	var left bool
	switch at.Direction {
	case "LEFT":
		left = true
	case "RIGHT":
	default:
		return nil, fmt.Errorf("BitShift direction %q is neither LEFT nor RIGHT", at.Direction)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, b := in[0], in[1]
		if err := sameType("BitShift", a, b); err != nil {
			return nil, err
		}
		var t *tensor.Tensor
		var err error
		switch ad := a.Data.(type) {
		case []uint8:
			t, err = bitShift(ad, b.Data.([]uint8), a.Shape, b.Shape, left)
		case []uint16:
			t, err = bitShift(ad, b.Data.([]uint16), a.Shape, b.Shape, left)
		case []uint32:
			t, err = bitShift(ad, b.Data.([]uint32), a.Shape, b.Shape, left)
		case []uint64:
			t, err = bitShift(ad, b.Data.([]uint64), a.Shape, b.Shape, left)
		default:
			return nil, inputErrorf("BitShift does not take %v", a.DType)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func bitShift[T uint8 | uint16 | uint32 | uint64](a, b []T, as, bs []int, left bool) (*tensor.Tensor, error) {
	f := func(x, s T) T { return x >> s }
	if left {
		f = func(x, s T) T { return x << s }
	}
	shape, r, err := elem.MapFunc(a, b, as, bs, f)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

func bitwiseBuilder(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			a, b := in[0], in[1]
			if err := sameType(op, a, b); err != nil {
				return nil, err
			}
			var t *tensor.Tensor
			var err error
			switch ad := a.Data.(type) {
			case []int8:
				t, err = bitwise(op, ad, b.Data.([]int8), a.Shape, b.Shape)
			case []uint8:
				t, err = bitwise(op, ad, b.Data.([]uint8), a.Shape, b.Shape)
			case []int16:
				t, err = bitwise(op, ad, b.Data.([]int16), a.Shape, b.Shape)
			case []uint16:
				t, err = bitwise(op, ad, b.Data.([]uint16), a.Shape, b.Shape)
			case []int32:
				t, err = bitwise(op, ad, b.Data.([]int32), a.Shape, b.Shape)
			case []uint32:
				t, err = bitwise(op, ad, b.Data.([]uint32), a.Shape, b.Shape)
			case []int64:
				t, err = bitwise(op, ad, b.Data.([]int64), a.Shape, b.Shape)
			case []uint64:
				t, err = bitwise(op, ad, b.Data.([]uint64), a.Shape, b.Shape)
			default:
				return nil, inputErrorf("%s does not take %v", op, a.DType)
			}
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{t}, nil
		}, nil
	}
}

func bitwise[T tensor.Integer](op string, a, b []T, as, bs []int) (*tensor.Tensor, error) {
	var f func(x, y T) T
	switch op {
	case "BitwiseAnd":
		f = func(x, y T) T { return x & y }
	case "BitwiseOr":
		f = func(x, y T) T { return x | y }
	default:
		f = func(x, y T) T { return x ^ y }
	}
	shape, r, err := elem.MapFunc(a, b, as, bs, f)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// --- unary math --------------------------------------------------------

type elemUnaryOp uint8

const (
	elemAbs elemUnaryOp = iota
	elemNeg
	elemSign
	elemBitNot
	elemSqrt
	elemExp
	elemLog
	elemReciprocal
	elemCeil
	elemFloor
	elemRound
	elemSin
	elemCos
	elemTan
	elemAsin
	elemAcos
	elemAtan
	elemSinh
	elemCosh
	elemAsinh
	elemAcosh
	elemAtanh
	elemErf
)

var elemUnaryNames = [...]string{
	elemAbs: "Abs", elemNeg: "Neg", elemSign: "Sign", elemBitNot: "BitwiseNot", elemSqrt: "Sqrt",
	elemExp: "Exp", elemLog: "Log", elemReciprocal: "Reciprocal", elemCeil: "Ceil", elemFloor: "Floor",
	elemRound: "Round", elemSin: "Sin", elemCos: "Cos", elemTan: "Tan", elemAsin: "Asin",
	elemAcos: "Acos", elemAtan: "Atan", elemSinh: "Sinh", elemCosh: "Cosh", elemAsinh: "Asinh",
	elemAcosh: "Acosh", elemAtanh: "Atanh", elemErf: "Erf",
}

// elemUnaryFloat64 are the float64 functions of the unary operators
// computed through float64 (every type but float32's fast kernels).
var elemUnaryFloat64 = [...]func(float64) float64{
	elemSqrt: math.Sqrt, elemExp: math.Exp, elemLog: math.Log,
	elemReciprocal: func(x float64) float64 { return 1 / x },
	elemCeil:       math.Ceil, elemFloor: math.Floor, elemRound: math.RoundToEven,
	elemSin: math.Sin, elemCos: math.Cos, elemTan: math.Tan, elemAsin: math.Asin,
	elemAcos: math.Acos, elemAtan: math.Atan, elemSinh: math.Sinh, elemCosh: math.Cosh,
	elemAsinh: math.Asinh, elemAcosh: math.Acosh, elemAtanh: math.Atanh, elemErf: math.Erf,
}

// elemUnaryTypes says which element types each operator takes: floats
// always; integers where the spec allows them.
func elemUnaryTakes(op elemUnaryOp, dt tensor.DataType) bool {
	switch op {
	case elemAbs, elemSign, elemErf:
		return dt.IsFloat() || dt.IsInteger()
	case elemNeg:
		return dt.IsFloat() || dt.IsInteger() && dt.IsSigned()
	case elemBitNot:
		return dt.IsInteger()
	}
	return dt.IsFloat()
}

func unaryMathBuilder(op elemUnaryOp) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return elemUnary(op, x) }), nil
	}
}

// elemUnary applies a unary operator to x. float32 runs in float32 loops
// (Exp and Erf on float32 approximations within a few ulps; the rest
// exact or through float64); FP16 and BF16 compute in float64 and round
// once.
func elemUnary(op elemUnaryOp, x *tensor.Tensor) (*tensor.Tensor, error) {
	if !elemUnaryTakes(op, x.DType) {
		return nil, inputErrorf("%s does not take %v", elemUnaryNames[op], x.DType)
	}
	if op == elemBitNot {
		return bitwiseNot(x)
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		switch op {
		case elemExp:
			r := make([]float32, len(d))
			elemExpSlice(r, d)
			out = r
		case elemErf:
			r := make([]float32, len(d))
			elemErfSlice(r, d)
			out = r
		default:
			out = elemUnaryT(op, d)
		}
	case []float64:
		out = elemUnaryT(op, d)
	case []tensor.F16, []tensor.BF16:
		f := elemUnaryFloat64[op]
		switch op {
		case elemAbs:
			f = math.Abs
		case elemNeg:
			f = func(v float64) float64 { return -v }
		case elemSign:
			f = elemSignFloat
		}
		return floatMap(elemUnaryNames[op], x, f)
	case []int8:
		out = elemUnaryT(op, d)
	case []uint8:
		out = elemUnaryT(op, d)
	case []int16:
		out = elemUnaryT(op, d)
	case []uint16:
		out = elemUnaryT(op, d)
	case []int32:
		out = elemUnaryT(op, d)
	case []uint32:
		out = elemUnaryT(op, d)
	case []int64:
		out = elemUnaryT(op, d)
	case []uint64:
		out = elemUnaryT(op, d)
	default:
		return nil, inputErrorf("%s does not take %v", elemUnaryNames[op], x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
}

// bitwiseNot flips every bit of an integer tensor.
func bitwiseNot(x *tensor.Tensor) (*tensor.Tensor, error) {
	var out any
	switch d := x.Data.(type) {
	case []int8:
		out = bitNot(d)
	case []uint8:
		out = bitNot(d)
	case []int16:
		out = bitNot(d)
	case []uint16:
		out = bitNot(d)
	case []int32:
		out = bitNot(d)
	case []uint32:
		out = bitNot(d)
	case []int64:
		out = bitNot(d)
	case []uint64:
		out = bitNot(d)
	default:
		return nil, inputErrorf("BitwiseNot does not take %v", x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
}

func bitNot[T tensor.Integer](x []T) []T {
	r := make([]T, len(x))
	for i, v := range x {
		r[i] = ^v
	}
	return r
}

func elemSignFloat(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v // ±0 and NaN
}

// elemUnaryT applies op to a slice of any numeric type (the caller checked
// the type is allowed).
func elemUnaryT[T tensor.Numeric](op elemUnaryOp, x []T) []T {
	r := make([]T, len(x))
	signed := tensor.DTypeOf[T]().IsSigned()
	switch op {
	case elemAbs:
		if !signed {
			copy(r, x)
			break
		}
		for i, v := range x {
			r[i] = max(v, -v) // -0 becomes +0; the most negative integer stays itself, as in numpy
		}
	case elemNeg:
		for i, v := range x {
			r[i] = -v
		}
	case elemSign:
		for i, v := range x {
			switch {
			case v > 0:
				r[i] = 1
			case v < 0:
				r[i] = 0
				r[i]-- // -1 (unsigned types never get here)
			default:
				r[i] = v // 0, -0 and NaN
			}
		}
	default:
		f := elemUnaryFloat64[op]
		for i, v := range x {
			r[i] = T(f(float64(v)))
		}
	}
	return r
}

// --- float32 approximations of exp, tanh and erf ------------------------
//
// The hot float32 paths (Exp, Sigmoid, Tanh, Erf, Gelu, Swish) compute
// with float32 polynomials instead of math's float64 functions, about
// twice as fast (BenchmarkActivations). Against math's float64 functions over every 131st
// float32 value (op_math_test.go checks a sample): e**x within 1.2 ulp,
// tanh 1.3, sigmoid 2.4, erf 2.6, erfc 3.3.

// elemExpf returns e**x in float32 for a float64 argument: x = k·ln2 + r
// with |r| <= ln2/2 reduced in float64 (so an argument computed in
// float64, as Gelu's and Swish's are, keeps its precision: exp would
// magnify a float32 rounding of it by |x|), e**r by its Taylor polynomial
// of degree 7 in float32 (truncation below 0.05 ulp), scaled by 2**k.
func elemExpf(x float64) float32 {
	if !(x < 88.72284) { // overflow, +Inf, NaN
		if x != x {
			return float32(x)
		}
		return float32(math.Inf(1))
	}
	if x < -103.972 { // below half the smallest subnormal
		return 0
	}
	const shifter = 0x1.8p52 // adding and subtracting it rounds to an integer, without a branch
	kf := (x*math.Log2E + shifter) - shifter
	k := int32(kf)
	r := float32(x - kf*math.Ln2)
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	if k > 127 {
		p *= 2
		k--
	}
	if k < -126 { // a subnormal result: scale in two steps, rounding once
		return p * math.Float32frombits(uint32(k+64+127)<<23) * (1.0 / (1 << 64))
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// elemExp32 returns e**x in float32.
func elemExp32(x float32) float32 { return elemExpf(float64(x)) }

// elemTanhC are the Taylor coefficients of tanh: tanh x = x + x·Σ c[i]·x^(2i+2).
var elemTanhC = [...]float32{-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925,
	21844.0 / 6081075, -929569.0 / 638512875, 6404582.0 / 10854718875, -443861162.0 / 1856156927625}

// elemTanh32 returns tanh x in float32: its Taylor series below 0.625,
// 1 - 2/(e**2|x| + 1) above, ±1 beyond 9.1 where float32 rounds to it.
func elemTanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.625 {
		z := x * x
		c := &elemTanhC
		p := c[8]
		p = p*z + c[7]
		p = p*z + c[6]
		p = p*z + c[5]
		p = p*z + c[4]
		p = p*z + c[3]
		p = p*z + c[2]
		p = p*z + c[1]
		p = p*z + c[0]
		return x + x*z*p
	}
	if a > 9.1 {
		if x < 0 {
			return -1
		}
		return 1
	}
	t := 1 - 2/(elemExpf(2*float64(a))+1) // NaN stays NaN
	if x < 0 {
		return -t
	}
	return t
}

// elemSigmoidf returns 1/(1+e**-x) in float32 for a float64 argument,
// through e**x for negative x so that tiny results keep their precision.
func elemSigmoidf(x float64) float32 {
	e := elemExpf(-math.Abs(x)) // NaN stays NaN
	// The numerator is e where x is negative (e/(1+e)), 1 elsewhere,
	// selected by the sign bit: random signs make a branch mispredict.
	neg := -uint32(math.Float64bits(x) >> 63)
	n := math.Float32frombits(math.Float32bits(e)&neg | math.Float32bits(1)&^neg)
	return n / (1 + e)
}

// elemSigmoid32 returns 1/(1+e**-x) in float32.
func elemSigmoid32(x float32) float32 { return elemSigmoidf(float64(x)) }

// elemErfC are the Taylor coefficients of erf: erf x = x·Σ c[n]·x^(2n),
// c[n] = 2/√π · (-1)^n / (n!·(2n+1)).
var elemErfC = func() (c [8]float32) {
	f := 2 / math.Sqrt(math.Pi)
	fact := 1.0
	for n := range c {
		if n > 0 {
			fact *= float64(n)
		}
		s := f / (fact * float64(2*n+1))
		if n%2 == 1 {
			s = -s
		}
		c[n] = float32(s)
	}
	return
}()

// elemErfcPiece approximates g(a) = erfc(a)·e**(a²) on one interval:
// g(mid + t/scale) = Σ c[k]·t^k for t in [-1, 1].
type elemErfcPiece struct {
	mid, scale float32
	c          [kernels.ErfcxDegree]float32
}

// elemErfcBounds split [0.5, 10.06) into the pieces' intervals; erfc is
// below half the smallest float32 subnormal from 10.06 on.
var elemErfcBounds = [...]float64{0.5, 1.5, 3, 5.5, 10.06}

// elemErfcPieces interpolate g at the Chebyshev points of each interval
// (math.Erfc in float64), converted to powers of t.
var elemErfcPieces = func() (ps [4]elemErfcPiece) {
	for i := range ps {
		lo, hi := elemErfcBounds[i], elemErfcBounds[i+1]
		for j, m := range kernels.ErfcxPiece(lo, hi) {
			ps[i].c[j] = float32(m)
		}
		ps[i].mid = float32((lo + hi) / 2)
		ps[i].scale = float32(2 / (hi - lo))
	}
	return
}()

// elemErfc32Pos returns erfc a for a >= 0.5 (or NaN).
func elemErfc32Pos(a float32) float32 { return elemErfcSq(a, float64(a)*float64(a)) }

// elemErfcSq returns erfc a = g(a)·e**(-a²) for a >= 0.5 (or NaN), given
// a² exactly (in float64) so that the exponential does not magnify a
// rounding of it.
func elemErfcSq(a float32, a2 float64) float32 {
	if !(a < 10.06) {
		if a != a {
			return a
		}
		return 0
	}
	i := 0
	if a >= 1.5 {
		i = 1
		if a >= 3 {
			i = 2
			if a >= 5.5 {
				i = 3
			}
		}
	}
	p := &elemErfcPieces[i]
	t := (a - p.mid) * p.scale
	c := &p.c
	g := c[9]
	g = g*t + c[8]
	g = g*t + c[7]
	g = g*t + c[6]
	g = g*t + c[5]
	g = g*t + c[4]
	g = g*t + c[3]
	g = g*t + c[2]
	g = g*t + c[1]
	g = g*t + c[0]
	return g * elemExpf(-a2)
}

// elemErf32 returns erf x in float32: the Taylor series below 0.5,
// 1 - erfc|x| above.
func elemErf32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.5 {
		z := x * x
		c := &elemErfC
		p := c[7]
		p = p*z + c[6]
		p = p*z + c[5]
		p = p*z + c[4]
		p = p*z + c[3]
		p = p*z + c[2]
		p = p*z + c[1]
		p = p*z + c[0]
		return x * p
	}
	r := 1 - elemErfc32Pos(a)
	if x < 0 {
		return -r
	}
	return r
}

// elemErfc32 returns erfc x = 1 - erf x in float32, keeping relative
// precision in the tail (x >= 0.5).
func elemErfc32(x float32) float32 {
	if x >= 0.5 {
		return elemErfc32Pos(x)
	}
	return 1 - elemErf32(x)
}

// Slice kernels of the float32 paths: dst[i] = f(src[i]).

func elemExpSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = elemExp32(v)
	}
}

func elemErfSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = elemErf32(v)
	}
}
