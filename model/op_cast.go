package model

import (
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Cast", Since: 1, Fold: true}, buildCast)
	register(Descriptor{Type: "CastLike", Since: 15, Fold: true}, buildCastLike)
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

func buildCast(n *node, at *CastAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	dt, err := DataTypeFromONNX(onnxpb.DataType(at.To))
	if err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return castTo(x, dt) }), nil
}

func buildCastLike(n *node, _ *CastLikeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
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

// castTo converts x to dt with Go's conversions: floats to integers
// truncate toward zero, numbers to BOOL are x != 0, BOOL to numbers 0 or
// 1; FP16 and BF16 go through float32 (rounding to nearest even).
func castTo(x *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if x.DType == dt {
		return x, nil
	}
	if x.DType == tensor.String || dt == tensor.String {
		return nil, unsupportedf("casts from or to strings")
	}
	src := x.Data
	switch d := src.(type) {
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
		out = tensor.Float32ToHalf[tensor.F16](convertFrom[float32](src))
	case tensor.BFloat16:
		out = tensor.Float32ToHalf[tensor.BF16](convertFrom[float32](src))
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
	return &tensor.Tensor{DType: dt, Shape: x.Shape, Data: out}, nil
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
