package arith

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The unary math functions. The opset 1 versions differ from opset 6 only
// by the legacy consumed_inputs attribute, refused when present; later
// versions widened the types. These are the operators.
var (
	Abs        = registerUnary(opAbs, 1)
	Neg        = registerUnary(opNeg, 1)
	Sign       = registerUnary(opSign, 9)
	Sqrt       = registerUnary(opSqrt, 1)
	Exp        = registerUnary(opExp, 1)
	Log        = registerUnary(opLog, 1)
	Reciprocal = registerUnary(opReciprocal, 1)
	Ceil       = registerUnary(opCeil, 1)
	Floor      = registerUnary(opFloor, 1)
	Round      = registerUnary(opRound, 11)
	Sin        = registerUnary(opSin, 7)
	Cos        = registerUnary(opCos, 7)
	Tan        = registerUnary(opTan, 7)
	Asin       = registerUnary(opAsin, 7)
	Acos       = registerUnary(opAcos, 7)
	Atan       = registerUnary(opAtan, 7)
	Sinh       = registerUnary(opSinh, 9)
	Cosh       = registerUnary(opCosh, 9)
	Asinh      = registerUnary(opAsinh, 9)
	Acosh      = registerUnary(opAcosh, 9)
	Atanh      = registerUnary(opAtanh, 9)
	Erf        = registerUnary(opErf, 9)
)

// registerUnary registers the operator computing op from opset since.
func registerUnary(op unaryOp, since int64) ops.Op {
	return ops.Op{ops.Register(ops.Descriptor{Type: unaryNames[op], Since: since, Fold: true}, unaryBuilder(op))}
}

type unaryOp uint8

const (
	opAbs unaryOp = iota
	opNeg
	opSign
	opSqrt
	opExp
	opLog
	opReciprocal
	opCeil
	opFloor
	opRound
	opSin
	opCos
	opTan
	opAsin
	opAcos
	opAtan
	opSinh
	opCosh
	opAsinh
	opAcosh
	opAtanh
	opErf
)

var unaryNames = [...]string{
	opAbs: "Abs", opNeg: "Neg", opSign: "Sign", opSqrt: "Sqrt",
	opExp: "Exp", opLog: "Log", opReciprocal: "Reciprocal", opCeil: "Ceil", opFloor: "Floor",
	opRound: "Round", opSin: "Sin", opCos: "Cos", opTan: "Tan", opAsin: "Asin",
	opAcos: "Acos", opAtan: "Atan", opSinh: "Sinh", opCosh: "Cosh", opAsinh: "Asinh",
	opAcosh: "Acosh", opAtanh: "Atanh", opErf: "Erf",
}

// unaryFloat64 are the float64 functions of the operators computed
// through float64 (every type but float32's fast kernels).
var unaryFloat64 = [...]func(float64) float64{
	opSqrt: math.Sqrt, opExp: math.Exp, opLog: math.Log,
	opReciprocal: func(x float64) float64 { return 1 / x },
	opCeil:       math.Ceil, opFloor: math.Floor, opRound: math.RoundToEven,
	opSin: math.Sin, opCos: math.Cos, opTan: math.Tan, opAsin: math.Asin,
	opAcos: math.Acos, opAtan: math.Atan, opSinh: math.Sinh, opCosh: math.Cosh,
	opAsinh: math.Asinh, opAcosh: math.Acosh, opAtanh: math.Atanh, opErf: math.Erf,
}

// takes says which element types each operator takes: floats always;
// integers where the spec allows them.
func (op unaryOp) takes(dt tensor.DataType) bool {
	switch op {
	case opAbs, opSign, opErf:
		return dt.IsFloat() || dt.IsInteger()
	case opNeg:
		return dt.IsFloat() || dt.IsInteger() && dt.IsSigned()
	}
	return dt.IsFloat()
}

// unary is one of the unary math functions.
type unary struct{ op unaryOp }

func unaryBuilder(op unaryOp) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return unary{op: op}, nil
	}
}

func (u unary) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(unaryOf(c, u.op, in[0]))
}

// unaryOf applies a unary operator to x. float32 runs in float32 loops
// (Exp and Erf on float32 approximations within a few ulps; the rest
// exact or through float64); FP16 and BF16 compute in float64 and round
// once. It stops with the request's error once the request ends.
func unaryOf(c *ops.Context, op unaryOp, x *tensor.Tensor) (*tensor.Tensor, error) {
	if !op.takes(x.DType) {
		return nil, ops.InputErrorf("%s does not take %v", unaryNames[op], x.DType)
	}
	var out any
	var err error
	switch d := x.Data.(type) {
	case []float32:
		switch op {
		case opExp:
			r := make([]float32, len(d))
			err = c.InPieces(len(d), func(lo, hi int) {
				dst, src := r[lo:hi], d[lo:hi]
				for i, v := range src {
					dst[i] = Expf(float64(v))
				}
			})
			out = r
		case opErf:
			r := make([]float32, len(d))
			err = c.InPieces(len(d), func(lo, hi int) {
				dst, src := r[lo:hi], d[lo:hi]
				for i, v := range src {
					dst[i] = Erf32(v)
				}
			})
			out = r
		default:
			out, err = unaryT(c, op, d)
		}
	case []float64:
		out, err = unaryT(c, op, d)
	case []tensor.F16, []tensor.BF16:
		f := unaryFloat64[op]
		switch op {
		case opAbs:
			f = math.Abs
		case opNeg:
			f = func(v float64) float64 { return -v }
		case opSign:
			f = signFloat
		}
		return MapFloat(c, unaryNames[op], x, f)
	case []int8:
		out, err = unaryT(c, op, d)
	case []uint8:
		out, err = unaryT(c, op, d)
	case []int16:
		out, err = unaryT(c, op, d)
	case []uint16:
		out, err = unaryT(c, op, d)
	case []int32:
		out, err = unaryT(c, op, d)
	case []uint32:
		out, err = unaryT(c, op, d)
	case []int64:
		out, err = unaryT(c, op, d)
	case []uint64:
		out, err = unaryT(c, op, d)
	default:
		return nil, ops.InputErrorf("%s does not take %v", unaryNames[op], x.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
}

func signFloat(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v // ±0 and NaN
}

// unaryT applies op to a slice of any numeric type (the caller checked
// the type is allowed), piece by piece under the request.
func unaryT[T tensor.Numeric](c *ops.Context, op unaryOp, x []T) ([]T, error) {
	r := make([]T, len(x))
	if err := c.InPieces(len(x), func(lo, hi int) { unaryRun(op, r[lo:hi], x[lo:hi]) }); err != nil {
		return nil, err
	}
	return r, nil
}

// unaryRun sets r[i] = op(x[i]).
func unaryRun[T tensor.Numeric](op unaryOp, r, x []T) {
	r = r[:len(x)]
	signed := tensor.DTypeOf[T]().IsSigned()
	switch op {
	case opAbs:
		if !signed {
			copy(r, x)
			break
		}
		for i, v := range x {
			r[i] = max(v, -v) // -0 becomes +0; the most negative integer stays itself, as in numpy
		}
	case opNeg:
		for i, v := range x {
			r[i] = -v
		}
	case opSign:
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
		f := unaryFloat64[op]
		for i, v := range x {
			r[i] = T(f(float64(v)))
		}
	}
}
