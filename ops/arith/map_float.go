package arith

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// MapFloat applies f elementwise to a floating-point tensor, in float64;
// FP32, FP16 and BF16 results round once from float64. A tensor of any
// other type is an input error naming op. It goes piece by piece under
// the request and stops with the request's error once the request ends
// (c may be nil: no request to watch).
func MapFloat(c *ops.Context, op string, x *tensor.Tensor, f func(float64) float64) (*tensor.Tensor, error) {
	var r any
	var err error
	switch d := x.Data.(type) {
	case []tensor.F16:
		o := make([]tensor.F16, len(d))
		err = c.InPieces(len(d), func(lo, hi int) {
			dst, src := o[lo:hi], d[lo:hi]
			for i, v := range src {
				dst[i] = tensor.F16FromFloat64(f(float64(v.Float32())))
			}
		})
		r = o
	case []tensor.BF16:
		o := make([]tensor.BF16, len(d))
		err = c.InPieces(len(d), func(lo, hi int) {
			dst, src := o[lo:hi], d[lo:hi]
			for i, v := range src {
				dst[i] = tensor.BF16FromFloat64(f(float64(v.Float32())))
			}
		})
		r = o
	case []float32:
		o := make([]float32, len(d))
		err = c.InPieces(len(d), func(lo, hi int) {
			dst, src := o[lo:hi], d[lo:hi]
			for i, v := range src {
				dst[i] = float32(f(float64(v)))
			}
		})
		r = o
	case []float64:
		o := make([]float64, len(d))
		err = c.InPieces(len(d), func(lo, hi int) {
			dst, src := o[lo:hi], d[lo:hi]
			for i, v := range src {
				dst[i] = f(v)
			}
		})
		r = o
	default:
		return nil, ops.InputErrorf("%s does not take %v", op, x.DType)
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
}
