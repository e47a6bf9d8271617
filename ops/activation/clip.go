package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Clip is the Clip operator, by opset range.
var Clip = ops.Op{
	ops.Register(ops.Descriptor{Type: "Clip", Since: 1, Until: 10, Fold: true}, buildClip6),
	ops.Register(ops.Descriptor{Type: "Clip", Since: 11, Fold: true}, buildClip),
}

// ClipAttrs are Clip's attributes before opset 11 (bounds became inputs).
type ClipAttrs struct {
	Min float32 `onnx:"min" default:"-3.4028234663852886e+38"`
	Max float32 `onnx:"max" default:"3.4028234663852886e+38"`
}

// clip6 implements Clip before opset 11: min/max attributes.
type clip6 struct{ lo, hi float32 }

func buildClip6(n *ops.Node, at *ClipAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return clip6{lo: at.Min, hi: at.Max}, nil
}

func (c clip6) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(floatMap32(oc, "Clip", in[0], cheapCost, c.k32, c.f64))
}

func (c clip6) k32(dst, src []float32) { clipSlice(dst, src, c.lo, c.hi) }

func (c clip6) f64(v float64) float64 { return min(max(v, float64(c.lo)), float64(c.hi)) }

// clip implements Clip from opset 11: optional min and max inputs,
// scalars of the input's type.
type clip struct{}

func buildClip(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 3, 1, 1); err != nil {
		return nil, err
	}
	return clip{}, nil
}

func (clip) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, lo, hi := in[0], ops.Optional(in, 1), ops.Optional(in, 2)
	for _, b := range []*tensor.Tensor{lo, hi} {
		if b != nil && (b.DType != x.DType || b.Len() != 1) {
			return nil, ops.InputErrorf("Clip bounds must be scalars of the input's type %v", x.DType)
		}
	}
	var out any
	var err error
	switch d := x.Data.(type) {
	case []float32:
		out, err = clipOf(c, d, lo, hi)
	case []float64:
		out, err = clipOf(c, d, lo, hi)
	case []int8:
		out, err = clipOf(c, d, lo, hi)
	case []uint8:
		out, err = clipOf(c, d, lo, hi)
	case []int16:
		out, err = clipOf(c, d, lo, hi)
	case []uint16:
		out, err = clipOf(c, d, lo, hi)
	case []int32:
		out, err = clipOf(c, d, lo, hi)
	case []uint32:
		out, err = clipOf(c, d, lo, hi)
	case []int64:
		out, err = clipOf(c, d, lo, hi)
	case []uint64:
		out, err = clipOf(c, d, lo, hi)
	case []tensor.F16, []tensor.BF16:
		// Clipping selects values: through float32 and back is exact.
		w := ops.HalfTo32(x)
		r, err := clipOf(c, w.Data.([]float32), halfBoundTo32(lo), halfBoundTo32(hi))
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{ops.ToHalf(&tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: r}, x.DType)}, nil
	default:
		return nil, ops.InputErrorf("Clip does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

func halfBoundTo32(b *tensor.Tensor) *tensor.Tensor {
	if b == nil {
		return nil
	}
	return ops.HalfTo32(b)
}

// clipOf bounds x to [lo, hi] (absent bounds do not bound); when lo > hi
// every value becomes hi, as ONNX (min then max) specifies. NaN stays NaN.
// It goes in pieces split across the engine's cores under the request.
func clipOf[T tensor.Numeric](c *ops.Context, x []T, lo, hi *tensor.Tensor) ([]T, error) {
	r := make([]T, len(x))
	err := c.ParallelRows(len(x), cheapCost, func(p, q int) {
		dst, src := r[p:q], x[p:q]
		switch {
		case lo != nil && hi != nil:
			clipSlice(dst, src, lo.Data.([]T)[0], hi.Data.([]T)[0])
		case lo != nil:
			l := lo.Data.([]T)[0]
			for i, v := range src {
				dst[i] = max(v, l)
			}
		case hi != nil:
			h := hi.Data.([]T)[0]
			for i, v := range src {
				dst[i] = min(v, h)
			}
		default:
			copy(dst, src)
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func clipSlice[T tensor.Numeric](dst, src []T, lo, hi T) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = min(max(v, lo), hi)
	}
}
