package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Cast converts between every type the Open Inference Protocol carries
// (float8, int4 and the other narrow types are refused by
// DataTypeFromONNX: no request could send or receive them). Its saturate
// attribute (opset 19) and round_mode (opset 25) govern only conversions
// to float8 types, so they change nothing here. Cast-1 named the target
// type as a string; from opset 6 it is the enum implemented.
func init() {
	ops.Register(ops.Descriptor{Type: "Cast", Since: 6, Fold: true}, buildCast)
}

// CastAttrs are Cast's attributes.
type CastAttrs struct {
	To        int64  `onnx:"to"`
	Saturate  bool   `onnx:"saturate" default:"true"`
	RoundMode string `onnx:"round_mode" default:"up"`
}

func checkRoundMode(mode string) error {
	switch mode {
	case "up", "down", "nearest":
		return nil
	}
	return fmt.Errorf("round_mode %q is not up, down or nearest", mode)
}

// cast is a compiled Cast: its target type.
type cast struct{ to tensor.DataType }

func buildCast(n *ops.Node, at *CastAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := checkRoundMode(at.RoundMode); err != nil {
		return nil, err
	}
	if _, ok := n.Attrs["to"]; !ok {
		return nil, fmt.Errorf("Cast needs its to attribute")
	}
	dt, err := onnx.DataTypeFromONNX(onnxpb.DataType(at.To))
	if err != nil {
		return nil, err
	}
	return cast{to: dt}, nil
}

func (c cast) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := CastToContext(oc, in[0], c.to)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// CastTo converts x to dt as ONNX's Cast does (x itself when it has type
// dt). Between numbers: floats to integers truncate toward zero (out of
// range is undefined in ONNX; Go's conversion decides), integers to
// narrower integers wrap, numbers to BOOL are x != 0 (NaN is true), BOOL
// to numbers 0 or 1, and FP16 and BF16 round to nearest even once from
// the exact source value. Numbers to STRING are formatted as numpy's str
// does (ONNX's reference: shortest round-trip digits, positional from
// 1e-4 to 1e16, "nan", "inf"); STRING to numbers parses decimal and
// scientific notation and, in any case, "INF", "+INF", "-INF", "NaN" (a
// string that is no number is an input error).
func CastTo(x *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	return CastToContext(nil, x, dt)
}

// CastToContext is CastTo under the request: it converts piece by
// piece, each piece counted with c.Tick, and stops with the request's
// error once the request ends (c may be nil: no request to watch).
func CastToContext(c *ops.Context, x *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if x.DType == dt {
		return x, nil
	}
	if !castable(dt) {
		return nil, ops.Unsupportedf("casts to %v", dt)
	}
	n := x.Len()
	out, from := MoverOf(dt).Alloc(n), MoverOf(x.DType)
	for lo := 0; lo < n; lo += ops.TickEvery {
		hi := min(lo+ops.TickEvery, n)
		if err := c.Tick(hi - lo); err != nil {
			return nil, err
		}
		ok, err := castInto(MoverOf(dt).slice(out, lo, hi), from.slice(x.Data, lo, hi), dt)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ops.Unsupportedf("casts from %v", x.DType)
		}
	}
	return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: out}, nil
}

// castable reports whether Cast produces dt.
func castable(dt tensor.DataType) bool {
	switch dt {
	case tensor.String, tensor.Bool, tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64,
		tensor.Int8, tensor.Uint8, tensor.Int16, tensor.Uint16, tensor.Int32, tensor.Uint32, tensor.Int64, tensor.Uint64:
		return true
	}
	return false
}

// castInto converts src into dst, a slice of dt of the same length; it
// reports false when it cannot convert from src's type.
func castInto(dst, src any, dt tensor.DataType) (bool, error) {
	if dt == tensor.String {
		formatInto(dst.([]string), src)
		return true, nil
	}
	switch d := src.(type) {
	case []string:
		return true, parseInto(dst, d, dt)
	case []tensor.F16:
		src = tensor.HalfToFloat32(d)
	case []tensor.BF16:
		src = tensor.HalfToFloat32(d)
	}
	switch d := dst.(type) {
	case []bool:
		for i, v := range (&tensor.Tensor{Data: src}).Float64s() {
			d[i] = v != 0
		}
		return true, nil
	case []tensor.F16:
		halfInto(d, src, tensor.F16FromFloat64)
		return true, nil
	case []tensor.BF16:
		halfInto(d, src, tensor.BF16FromFloat64)
		return true, nil
	case []float32:
		return convertInto(d, src), nil
	case []float64:
		return convertInto(d, src), nil
	case []int8:
		return convertInto(d, src), nil
	case []uint8:
		return convertInto(d, src), nil
	case []int16:
		return convertInto(d, src), nil
	case []uint16:
		return convertInto(d, src), nil
	case []int32:
		return convertInto(d, src), nil
	case []uint32:
		return convertInto(d, src), nil
	case []int64:
		return convertInto(d, src), nil
	case []uint64:
		return convertInto(d, src), nil
	}
	return false, nil
}

// halfInto rounds numbers (FP16 and BF16 already widened to float32) to
// a half type once: float32 and integers up to 2^53 reach float64
// exactly; larger integers lie far beyond every half type's range.
func halfInto[H tensor.F16 | tensor.BF16](dst []H, src any, round func(float64) H) {
	for i, v := range (&tensor.Tensor{Data: src}).Float64s() {
		dst[i] = round(v)
	}
}

// convertInto converts src's numbers (or BOOLs, to 0 and 1) into dst; it
// reports false for any other src.
func convertInto[D tensor.Numeric](dst []D, src any) bool {
	switch s := src.(type) {
	case []bool:
		for i, v := range s {
			if v {
				dst[i] = 1
			}
		}
	case []uint8:
		convert(dst, s)
	case []uint16:
		convert(dst, s)
	case []uint32:
		convert(dst, s)
	case []uint64:
		convert(dst, s)
	case []int8:
		convert(dst, s)
	case []int16:
		convert(dst, s)
	case []int32:
		convert(dst, s)
	case []int64:
		convert(dst, s)
	case []float32:
		convert(dst, s)
	case []float64:
		convert(dst, s)
	default:
		return false
	}
	return true
}

// convert sets dst to src's values converted to D.
func convert[D, S tensor.Numeric](dst []D, src []S) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = D(v)
	}
}
