package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// Relu is the Relu operator.
var Relu = ops.Op{
	ops.Register(ops.Descriptor{Type: "Relu", Since: 1, Fold: true}, buildRelu),
}

// LeakyRelu is the LeakyRelu operator.
var LeakyRelu = ops.Op{
	ops.Register(ops.Descriptor{Type: "LeakyRelu", Since: 1, Fold: true}, buildLeakyRelu),
}

// relu implements Relu, max(x, 0), on floating-point and signed integer
// types; NaN stays NaN.
type relu struct{}

func buildRelu(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return relu{}, nil
}

func (relu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var out any
	var err error
	switch d := x.Data.(type) {
	case []float32:
		r := c.Float32Output(len(d)) // every element is written
		if ops.OneCore(len(d), cheapCost) {
			reluSlice(r, d)
		} else if err = c.ParallelRows(len(d), cheapCost, func(lo, hi int) { reluSlice(r[lo:hi], d[lo:hi]) }); err != nil {
			return nil, err
		}
		y := c.NewSingle(len(x.Shape)) // the run's: no tensor, shape or result slice allocated, nor r's box when r is the buffer of the run before
		copy(y.Shape(), x.Shape)
		return y.Float32s(r), nil
	case []float64:
		out, err = reluOf(c, d)
	case []int8:
		out, err = reluOf(c, d)
	case []int16:
		out, err = reluOf(c, d)
	case []int32:
		out, err = reluOf(c, d)
	case []int64:
		out, err = reluOf(c, d)
	case []tensor.F16, []tensor.BF16:
		return ops.Result(arith.MapFloat(c, "Relu", x, func(v float64) float64 { return max(v, 0) }))
	default:
		return nil, ops.InputErrorf("Relu does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return ops.Result(&tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil)
}

// reluOf is max(x, 0), NaN staying NaN, in pieces split across the
// engine's cores under the request.
func reluOf[T tensor.Numeric](c *ops.Context, x []T) ([]T, error) {
	r := make([]T, len(x))
	err := c.ParallelRows(len(x), cheapCost, func(lo, hi int) {
		dst, src := r[lo:hi], x[lo:hi]
		for i, v := range src {
			dst[i] = max(v, 0)
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// reluSlice sets dst[i] = max(src[i], 0), NaN staying NaN, as Relu
// computes float32 tensors; dst may be src.
func reluSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = max(v, 0)
	}
}

// LeakyReluAttrs are LeakyRelu's attributes.
type LeakyReluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.01"`
}

// leakyRelu implements LeakyRelu: x, or alpha·x below 0.
type leakyRelu struct{ alpha float32 }

func buildLeakyRelu(n *ops.Node, at *LeakyReluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return leakyRelu{alpha: at.Alpha}, nil
}

func (l leakyRelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	k, a := c.Engine().Table().LeakyRelu, l.alpha
	return ops.Result(floatMap32(c, "LeakyRelu", in[0], kernelCost, func(dst, src []float32) { k(dst, src, a) }, l.f64))
}

// k32 is LeakyRelu's float32 loop, which kernels.LeakyRelu and every
// table's twin of it compute bit for bit: Run runs those; the tests hold
// them to this.
func (l leakyRelu) k32(dst, src []float32) {
	a := l.alpha
	dst = dst[:len(src)]
	for i, v := range src {
		if v < 0 {
			v *= a
		}
		dst[i] = v
	}
}

func (l leakyRelu) f64(v float64) float64 {
	if v < 0 {
		return float64(l.alpha) * v
	}
	return v
}
