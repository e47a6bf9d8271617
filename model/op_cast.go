package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Cast and CastLike convert between every type the Open Inference
// Protocol carries (float8, int4 and the other narrow types are refused
// by DataTypeFromONNX: no request could send or receive them). Their
// saturate attribute (opset 19) and round_mode (opset 25) govern only
// conversions to float8 types, so they change nothing here. Cast-1 named
// the target type as a string; from opset 6 it is the enum implemented.
func init() {
	register(Descriptor{Type: "Cast", Since: 6, Fold: true}, buildCast)
	register(Descriptor{Type: "CastLike", Since: 15, Fold: true}, buildCastLike)
	register(Descriptor{Type: "ConstantOfShape", Since: 9, Fold: true}, buildConstantOfShape)
}

// CastAttrs are Cast's attributes.
type CastAttrs struct {
	To        int64  `onnx:"to"`
	Saturate  bool   `onnx:"saturate" default:"true"`
	RoundMode string `onnx:"round_mode" default:"up"`
}

// CastLikeAttrs are CastLike's attributes.
type CastLikeAttrs struct {
	Saturate  bool   `onnx:"saturate" default:"true"`
	RoundMode string `onnx:"round_mode" default:"up"`
}

// ConstantOfShapeAttrs are ConstantOfShape's attributes: a one-element
// tensor whose value and type fill the output (FLOAT 0 when absent).
type ConstantOfShapeAttrs struct {
	Value *tensor.Tensor `onnx:"value"`
}

func checkRoundMode(mode string) error {
	switch mode {
	case "up", "down", "nearest":
		return nil
	}
	return fmt.Errorf("round_mode %q is not up, down or nearest", mode)
}

func buildCast(n *node, at *CastAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := checkRoundMode(at.RoundMode); err != nil {
		return nil, err
	}
	if _, ok := n.attrs["to"]; !ok {
		return nil, fmt.Errorf("Cast needs its to attribute")
	}
	dt, err := DataTypeFromONNX(onnxpb.DataType(at.To))
	if err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return castTo(x, dt) }), nil
}

func buildCastLike(n *node, at *CastLikeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if err := checkRoundMode(at.RoundMode); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		y, err := castTo(in[0], in[1].DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// castTo converts x to dt as ONNX's Cast does. Between numbers: floats to
// integers truncate toward zero (out of range is undefined in ONNX; Go's
// conversion decides), integers to narrower integers wrap, numbers to
// BOOL are x != 0 (NaN is true), BOOL to numbers 0 or 1, and FP16 and
// BF16 round to nearest even once from the exact source value. Numbers to
// STRING are formatted as numpy's str does (ONNX's reference: shortest
// round-trip digits, positional from 1e-4 to 1e16, "nan", "inf"); STRING
// to numbers parses decimal and scientific notation and, in any case,
// "INF", "+INF", "-INF", "NaN" (a string that is no number is an input
// error).
func castTo(x *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if x.DType == dt {
		return x, nil
	}
	if dt == tensor.String {
		return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: formatStrings(x)}, nil
	}
	src := x.Data
	switch d := src.(type) {
	case []string:
		f, err := parseStrings(d, dt)
		if err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: f}, nil
	case []tensor.F16:
		src = tensor.HalfToFloat32(d)
	case []tensor.BF16:
		src = tensor.HalfToFloat32(d)
	}
	var out any
	switch dt {
	case tensor.Bool:
		b := make([]bool, x.Len())
		for i, v := range (&tensor.Tensor{Data: src}).Float64s() {
			b[i] = v != 0
		}
		out = b
	case tensor.Float16:
		out = halfFrom(src, tensor.F16FromFloat64)
	case tensor.BFloat16:
		out = halfFrom(src, tensor.BF16FromFloat64)
	case tensor.Float32:
		out = convertFrom[float32](src)
	case tensor.Float64:
		out = convertFrom[float64](src)
	case tensor.Int8:
		out = convertFrom[int8](src)
	case tensor.Uint8:
		out = convertFrom[uint8](src)
	case tensor.Int16:
		out = convertFrom[int16](src)
	case tensor.Uint16:
		out = convertFrom[uint16](src)
	case tensor.Int32:
		out = convertFrom[int32](src)
	case tensor.Uint32:
		out = convertFrom[uint32](src)
	case tensor.Int64:
		out = convertFrom[int64](src)
	case tensor.Uint64:
		out = convertFrom[uint64](src)
	default:
		return nil, unsupportedf("casts to %v", dt)
	}
	if out == nil {
		return nil, unsupportedf("casts from %v", x.DType)
	}
	return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: out}, nil
}

// halfFrom rounds numbers (FP16 and BF16 already widened to float32) to
// a half type once: float32 and integers up to 2^53 reach float64
// exactly; larger integers lie far beyond every half type's range.
func halfFrom[H tensor.F16 | tensor.BF16](src any, round func(float64) H) []H {
	f := (&tensor.Tensor{Data: src}).Float64s()
	out := make([]H, len(f))
	for i, v := range f {
		out[i] = round(v)
	}
	return out
}

func convertFrom[D tensor.Numeric](src any) []D {
	switch s := src.(type) {
	case []bool:
		r := make([]D, len(s))
		for i, v := range s {
			if v {
				r[i] = 1
			}
		}
		return r
	case []uint8:
		return convert[D](s)
	case []uint16:
		return convert[D](s)
	case []uint32:
		return convert[D](s)
	case []uint64:
		return convert[D](s)
	case []int8:
		return convert[D](s)
	case []int16:
		return convert[D](s)
	case []int32:
		return convert[D](s)
	case []int64:
		return convert[D](s)
	case []float32:
		return convert[D](s)
	case []float64:
		return convert[D](s)
	}
	return nil
}

// --- numbers to strings ---------------------------------------------------

// formatStrings formats every element of x as numpy's str does.
func formatStrings(x *tensor.Tensor) []string {
	out := make([]string, x.Len())
	switch d := x.Data.(type) {
	case []bool:
		for i, v := range d {
			out[i] = "False"
			if v {
				out[i] = "True"
			}
		}
	case []float32:
		for i, v := range d {
			out[i] = formatFloat(float64(v), strconv.FormatFloat(float64(v), 'e', -1, 32))
		}
	case []float64:
		for i, v := range d {
			out[i] = formatFloat(v, strconv.FormatFloat(v, 'e', -1, 64))
		}
	case []tensor.F16:
		for i, v := range d {
			f := float64(v.Float32())
			out[i] = formatFloat(f, shortestDigits(f, func(p float64) bool { return tensor.F16FromFloat64(p) == v }))
		}
	case []tensor.BF16:
		for i, v := range d {
			f := float64(v.Float32())
			out[i] = formatFloat(f, shortestDigits(f, func(p float64) bool { return tensor.BF16FromFloat64(p) == v }))
		}
	case []int8:
		formatInts(out, d)
	case []int16:
		formatInts(out, d)
	case []int32:
		formatInts(out, d)
	case []int64:
		formatInts(out, d)
	case []uint8:
		formatUints(out, d)
	case []uint16:
		formatUints(out, d)
	case []uint32:
		formatUints(out, d)
	case []uint64:
		formatUints(out, d)
	}
	return out
}

func formatInts[T int8 | int16 | int32 | int64](out []string, d []T) {
	for i, v := range d {
		out[i] = strconv.FormatInt(int64(v), 10)
	}
}

func formatUints[T uint8 | uint16 | uint32 | uint64](out []string, d []T) {
	for i, v := range d {
		out[i] = strconv.FormatUint(uint64(v), 10)
	}
}

// shortestDigits returns, in strconv's 'e' format, the fewest significant
// digits of v that read back (through same) as the same half value.
func shortestDigits(v float64, same func(float64) bool) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'e', -1, 64)
	}
	for p := 0; p < 17; p++ {
		s := strconv.FormatFloat(v, 'e', p, 64)
		if r, err := strconv.ParseFloat(s, 64); err == nil && same(r) {
			return s
		}
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}

// formatFloat lays out v, whose significant digits sci gives in strconv's
// 'e' format, as Python and numpy print floats: positional ("0.5",
// "100.0") when v is 0 or 1e-4 <= |v| < 1e16, scientific ("1e-05",
// "1.5e+20") otherwise; "nan", "inf", "-inf".
func formatFloat(v float64, sci string) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	sign := ""
	if strings.HasPrefix(sci, "-") {
		sign, sci = "-", sci[1:]
	}
	mant, e, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(e)
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits, exp = "0", 0
	}
	if a := math.Abs(v); a == 0 || a >= 1e-4 && a < 1e16 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digits
		}
		if len(digits) <= exp+1 {
			return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		}
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
	s := sign + digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	return s + fmt.Sprintf("e%+03d", exp)
}

// --- strings to numbers -----------------------------------------------------

// parseStrings converts strings to dt.
func parseStrings(d []string, dt tensor.DataType) (any, error) {
	switch {
	case dt.IsFloat():
		f := make([]float64, len(d))
		for i, s := range d {
			v, err := parseFloatString(s)
			if err != nil {
				return nil, err
			}
			f[i] = v
		}
		switch dt {
		case tensor.Float16:
			return halfFrom(f, tensor.F16FromFloat64), nil
		case tensor.BFloat16:
			return halfFrom(f, tensor.BF16FromFloat64), nil
		case tensor.Float32:
			return convert[float32](f), nil
		}
		return f, nil
	case dt == tensor.Bool:
		b := make([]bool, len(d))
		for i, s := range d {
			switch t := strings.TrimSpace(s); {
			case strings.EqualFold(t, "true"):
				b[i] = true
			case strings.EqualFold(t, "false"):
			default:
				v, err := parseFloatString(s)
				if err != nil {
					return nil, err
				}
				b[i] = v != 0
			}
		}
		return b, nil
	case dt.IsInteger():
		signed := dt.IsSigned()
		ints := make([]int64, len(d))
		uints := make([]uint64, len(d))
		for i, s := range d {
			t := strings.TrimSpace(s)
			var err error
			if signed {
				ints[i], err = strconv.ParseInt(t, 10, 64)
			} else if uints[i], err = strconv.ParseUint(strings.TrimPrefix(t, "+"), 10, 64); err != nil {
				var v int64 // a negative value wraps, as a negative integer cast to an unsigned type
				if v, err = strconv.ParseInt(t, 10, 64); err == nil {
					uints[i] = uint64(v)
				}
			}
			if err != nil { // "100.5" and the like: truncated, as Cast of the float would
				v, ferr := parseFloatString(s)
				if ferr != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<63 {
					return nil, inputErrorf("Cast: %q is not an integer of %v's range", s, dt)
				}
				ints[i], uints[i] = int64(v), uint64(int64(v))
			}
		}
		wide := &tensor.Tensor{DType: tensor.Uint64, Data: uints}
		if signed {
			wide = &tensor.Tensor{DType: tensor.Int64, Data: ints}
		}
		t, err := castTo(wide, dt) // narrower integers wrap
		if err != nil {
			return nil, err
		}
		return t.Data, nil
	}
	return nil, unsupportedf("casts from strings to %v", dt)
}

// parseFloatString reads a decimal or scientific number, or (in any case)
// INF, +INF, -INF, INFINITY or NAN, surrounding spaces ignored.
func parseFloatString(s string) (float64, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, nil // ±Inf beyond the range, 0 below it
		}
		return 0, inputErrorf("Cast: %q is not a number", s)
	}
	return v, nil
}

// --- ConstantOfShape ----------------------------------------------------------

func buildConstantOfShape(n *node, at *ConstantOfShapeAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	val := at.Value
	if val == nil {
		val = tensor.Scalar(float32(0))
	}
	if val.Len() != 1 {
		return nil, fmt.Errorf("ConstantOfShape value must have one element, has %d", val.Len())
	}
	return unary(func(s *tensor.Tensor) (*tensor.Tensor, error) {
		dims, ok := s.Data.([]int64)
		if !ok || s.Rank() != 1 {
			return nil, inputErrorf("ConstantOfShape takes a 1-D INT64 shape, got %v%s", s.DType, tensor.ShapeString(s.Shape))
		}
		shape := make([]int, len(dims))
		for i, d := range dims {
			if d < 0 || d > tensor.MaxElements {
				return nil, inputErrorf("ConstantOfShape: dimension %d is %d", i, d)
			}
			shape[i] = int(d)
		}
		t, err := tensor.New(val.DType, shape)
		if err != nil {
			return nil, inputErrorf("ConstantOfShape: %v", err)
		}
		fillFirst(t.Data, val.Data)
		return t, nil
	}), nil
}

// fillFirst sets every element of dst to the first element of src, a
// slice of the same type.
func fillFirst(dst, src any) {
	switch d := dst.(type) {
	case []bool:
		fill(d, src.([]bool)[0])
	case []uint8:
		fill(d, src.([]uint8)[0])
	case []uint16:
		fill(d, src.([]uint16)[0])
	case []uint32:
		fill(d, src.([]uint32)[0])
	case []uint64:
		fill(d, src.([]uint64)[0])
	case []int8:
		fill(d, src.([]int8)[0])
	case []int16:
		fill(d, src.([]int16)[0])
	case []int32:
		fill(d, src.([]int32)[0])
	case []int64:
		fill(d, src.([]int64)[0])
	case []float32:
		fill(d, src.([]float32)[0])
	case []float64:
		fill(d, src.([]float64)[0])
	case []tensor.F16:
		fill(d, src.([]tensor.F16)[0])
	case []tensor.BF16:
		fill(d, src.([]tensor.BF16)[0])
	case []string:
		fill(d, src.([]string)[0])
	}
}

func fill[T tensor.Elem](d []T, v T) {
	var zero T
	if v == zero {
		return // already zero
	}
	for i := range d {
		d[i] = v
	}
}
