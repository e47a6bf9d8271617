package conv

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/ops/matmul"
	"github.com/quantserve/quantserve/tensor"
)

// A static QDQ file quantizes a squeeze-and-excitation block's scaled
// image before the convolution reading it:
//
//	y = Conv(QDQ(Mul(x, s)))
//
// The fused convolution takes the Mul and the pair as its input stage
// (input_qdq_*): it scales the image as the Mul does, then applies the
// pair in place, as the QuantizeDequantize step does (the same kernels),
// and convolves the result. Taken in, they let the image keep a
// channels-last layout from the convolution that writes it, where the
// Mul's and the pair's steps read it NCHW, and save their two passes'
// outputs.

// pairInput returns the convolution's input x, times xs when xs is not
// nil (as Mul gives it), with f's input pair applied, in x's layout. own
// says x, channels-last, may be written in place. tmp reports whether
// the result is a pooled buffer of its own, which the caller returns
// (putBuf) once the convolution has read it.
func (f *fusedConv) pairInput(c *ops.Context, x, xs *tensor.Tensor, own bool) (y *tensor.Tensor, tmp bool, err error) {
	if x.DType != tensor.Float32 || xs != nil && xs.DType != tensor.Float32 {
		if xs != nil {
			return nil, false, ops.InputErrorf("Mul operands have types %v and %v", x.DType, xs.DType)
		}
		return nil, false, ops.InputErrorf("QuantizeLinear takes FP32 x, got %v", x.DType)
	}
	switch {
	case xs != nil && f.layouts.nhwcIn:
		if y, tmp, err = scaleNHWC(c, x, xs, own); err != nil {
			return nil, false, err
		}
	case xs != nil:
		if y, err = arith.MulTensors(x, xs); err != nil {
			return nil, false, err
		}
	case own:
		y = x
	default:
		src := x.Data.([]float32)
		d := getBuf(len(src))
		copy(d, src)
		y, tmp = &tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: d}, true
	}
	d := y.Data.([]float32)
	k := c.Engine().Table().FakeQuantKernels()
	if err := c.ParallelRows(len(d), matmul.QDQCost, func(lo, hi int) { f.inPair.ApplyVector(d[lo:hi], d[lo:hi], k) }); err != nil {
		if tmp {
			putBuf(d)
		}
		return nil, false, err
	}
	return y, tmp, nil
}
