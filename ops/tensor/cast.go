package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/onnx"
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

func (c cast) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := CastTo(in[0], c.to)
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
		return nil, ops.Unsupportedf("casts to %v", dt)
	}
	if out == nil {
		return nil, ops.Unsupportedf("casts from %v", x.DType)
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

// convert returns src's values converted to D.
func convert[D, S tensor.Numeric](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}
