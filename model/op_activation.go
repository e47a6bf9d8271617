package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// Activations. The opset 1 versions of Relu, LeakyRelu, Sigmoid, Tanh,
// Elu, Selu, HardSigmoid and Clip differ from opset 6 only by the legacy
// consumed_inputs attribute, which is refused when present (as every
// attribute an attributes struct does not name); later versions widened
// the types.
func init() {
	register(Descriptor{Type: "Relu", Since: 1, Fold: true}, buildRelu)
	register(Descriptor{Type: "LeakyRelu", Since: 1, Fold: true}, buildLeakyRelu)
	register(Descriptor{Type: "Sigmoid", Since: 1, Fold: true}, floatActivation("Sigmoid", sigmoidSlice, sigmoid))
	register(Descriptor{Type: "Tanh", Since: 1, Fold: true}, floatActivation("Tanh", tanhSlice, math.Tanh))
	register(Descriptor{Type: "HardSigmoid", Since: 1, Fold: true}, buildHardSigmoid)
	register(Descriptor{Type: "HardSwish", Since: 14, Fold: true}, floatActivation("HardSwish", hardSwishSlice, hardSwish))
	register(Descriptor{Type: "Elu", Since: 1, Fold: true}, buildElu)
	register(Descriptor{Type: "Selu", Since: 1, Fold: true}, buildSelu)
	register(Descriptor{Type: "Celu", Since: 12, Fold: true}, buildCelu)
	register(Descriptor{Type: "Softplus", Since: 1, Fold: true}, floatActivation("Softplus", nil, softplus))
	register(Descriptor{Type: "Softsign", Since: 1, Fold: true}, floatActivation("Softsign", nil, func(v float64) float64 { return v / (1 + math.Abs(v)) }))
	register(Descriptor{Type: "ThresholdedRelu", Since: 10, Fold: true}, buildThresholdedRelu)
	register(Descriptor{Type: "Mish", Since: 18, Fold: true}, floatActivation("Mish", nil, func(v float64) float64 { return v * math.Tanh(softplus(v)) }))
	register(Descriptor{Type: "Shrink", Since: 9, Fold: true}, buildShrink)
	register(Descriptor{Type: "Gelu", Since: 20, Fold: true}, buildGelu)
	register(Descriptor{Type: "Swish", Since: 24, Fold: true}, buildSwish)
	register(Descriptor{Type: "PRelu", Since: 7, Fold: true}, buildPRelu)
	register(Descriptor{Type: "Clip", Since: 1, Until: 10, Fold: true}, buildClip6)
	register(Descriptor{Type: "Clip", Since: 11, Fold: true}, buildClip)
	register(Descriptor{Type: "Dropout", Since: 7, Until: 9, Fold: true}, buildDropout7)
	register(Descriptor{Type: "Dropout", Since: 10, Until: 11, Fold: true}, buildDropout7)
	register(Descriptor{Type: "Dropout", Since: 12, Fold: true}, buildDropout)
}

// LeakyReluAttrs are LeakyRelu's attributes.
type LeakyReluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.01"`
}

// GeluAttrs are Gelu's attributes.
type GeluAttrs struct {
	Approximate string `onnx:"approximate" default:"none"`
}

// ClipAttrs are Clip's attributes before opset 11 (bounds became inputs).
type ClipAttrs struct {
	Min float32 `onnx:"min" default:"-3.4028234663852886e+38"`
	Max float32 `onnx:"max" default:"3.4028234663852886e+38"`
}

// HardSigmoidAttrs are HardSigmoid's attributes: max(0, min(1, alpha·x + beta)).
type HardSigmoidAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.2"`
	Beta  float32 `onnx:"beta" default:"0.5"`
}

// EluAttrs are the attributes of Elu and Celu.
type EluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1"`
}

// SeluAttrs are Selu's attributes.
type SeluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1.67326319217681884765625"`
	Gamma float32 `onnx:"gamma" default:"1.05070102214813232421875"`
}

// ThresholdedReluAttrs are ThresholdedRelu's attributes.
type ThresholdedReluAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1"`
}

// ShrinkAttrs are Shrink's attributes.
type ShrinkAttrs struct {
	Lambd float32 `onnx:"lambd" default:"0.5"`
	Bias  float32 `onnx:"bias"`
}

// SwishAttrs are Swish's attributes: x·sigmoid(alpha·x).
type SwishAttrs struct {
	Alpha float32 `onnx:"alpha" default:"1"`
}

// DropoutAttrs are Dropout's attributes before opset 12.
type DropoutAttrs struct {
	Ratio float32 `onnx:"ratio" default:"0.5"`
}

// Dropout12Attrs are Dropout's attributes from opset 12 (ratio and
// training_mode became inputs).
type Dropout12Attrs struct {
	Seed *int64 `onnx:"seed"`
}

// floatMap applies f elementwise to a floating-point tensor, in float64;
// FP16 and BF16 results round once from float64.
func floatMap(op string, x *tensor.Tensor, f func(float64) float64) (*tensor.Tensor, error) {
	switch d := x.Data.(type) {
	case []tensor.F16:
		r := make([]tensor.F16, len(d))
		for i, v := range d {
			r[i] = tensor.F16FromFloat64(f(float64(v.Float32())))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []tensor.BF16:
		r := make([]tensor.BF16, len(d))
		for i, v := range d {
			r[i] = tensor.BF16FromFloat64(f(float64(v.Float32())))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []float32:
		r := make([]float32, len(d))
		for i, v := range d {
			r[i] = float32(f(float64(v)))
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	case []float64:
		r := make([]float64, len(d))
		for i, v := range d {
			r[i] = f(v)
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return nil, inputErrorf("%s does not take %v", op, x.DType)
}

// floatMap32 is floatMap with a float32 kernel for float32 tensors
// (k32(dst, src) fills dst); other types go through f in float64.
func floatMap32(op string, x *tensor.Tensor, k32 func(dst, src []float32), f func(float64) float64) (*tensor.Tensor, error) {
	if d, ok := x.Data.([]float32); ok && k32 != nil {
		r := make([]float32, len(d))
		k32(r, d)
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: r}, nil
	}
	return floatMap(op, x, f)
}

// floatActivation builds an attribute-free activation over floating-point
// types: k32 (if any) for float32, f in float64 otherwise.
func floatActivation(op string, k32 func(dst, src []float32), f func(float64) float64) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return floatMap32(op, x, k32, f) }), nil
	}
}

// --- Relu, LeakyRelu ----------------------------------------------------

// buildRelu implements Relu on floating-point and signed integer types.
func buildRelu(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		var out any
		switch d := x.Data.(type) {
		case []float32:
			r := make([]float32, len(d))
			reluSlice(r, d)
			out = r
		case []float64:
			out = relu(d)
		case []int8:
			out = relu(d)
		case []int16:
			out = relu(d)
		case []int32:
			out = relu(d)
		case []int64:
			out = relu(d)
		case []tensor.F16, []tensor.BF16:
			return floatMap("Relu", x, func(v float64) float64 { return max(v, 0) })
		default:
			return nil, inputErrorf("Relu does not take %v", x.DType)
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
	}), nil
}

// relu is max(x, 0), NaN staying NaN.
func relu[T tensor.Numeric](x []T) []T {
	r := make([]T, len(x))
	for i, v := range x {
		r[i] = max(v, 0)
	}
	return r
}

func reluSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = max(v, 0)
	}
}

func buildLeakyRelu(n *node, at *LeakyReluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a32 := at.Alpha
	a := float64(a32)
	k32 := func(dst, src []float32) {
		dst = dst[:len(src)]
		for i, v := range src {
			if v < 0 {
				v *= a32
			}
			dst[i] = v
		}
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap32("LeakyRelu", x, k32, func(v float64) float64 {
			if v < 0 {
				return a * v
			}
			return v
		})
	}), nil
}

// --- Sigmoid, Tanh, HardSigmoid, HardSwish, Swish -------------------------

func sigmoidSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = elemSigmoid32(v)
	}
}

func tanhSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = elemTanh32(v)
	}
}

func buildHardSigmoid(n *node, at *HardSigmoidAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a32, b32 := at.Alpha, at.Beta
	a, b := float64(a32), float64(b32)
	k32 := func(dst, src []float32) {
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = max(0, min(1, a32*v+b32))
		}
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap32("HardSigmoid", x, k32, func(v float64) float64 { return max(0, min(1, a*v+b)) })
	}), nil
}

// hardSwish is x·HardSigmoid(x) with alpha 1/6, beta 1/2.
func hardSwish(v float64) float64 { return v * max(0, min(1, v/6+0.5)) }

func hardSwishSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = v * max(0, min(1, v*(1.0/6)+0.5))
	}
}

// buildSwish implements Swish (opset 24): x·sigmoid(alpha·x).
func buildSwish(n *node, at *SwishAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := float64(at.Alpha)
	k32 := func(dst, src []float32) {
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = v * elemSigmoidf(a*float64(v)) // alpha·x unrounded: sigmoid would magnify its rounding
		}
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap32("Swish", x, k32, func(v float64) float64 { return v * sigmoid(a*v) })
	}), nil
}

// --- Gelu -----------------------------------------------------------------

// buildGelu implements Gelu (opset 20): x·Φ(x), or its tanh approximation.
func buildGelu(n *node, at *GeluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	var f func(float64) float64
	var k32 func(dst, src []float32)
	switch approx := at.Approximate; approx {
	case "none":
		f = func(v float64) float64 { return 0.5 * v * math.Erfc(-v/math.Sqrt2) }
		gelu := kernelTable(n).Gelu
		k32 = func(dst, src []float32) { gelu(dst, src, nil) }
	case "tanh":
		f = func(v float64) float64 { return v * sigmoid(2*geluTanhArg(v)) }
		k32 = geluTanhSlice
	default:
		return nil, unsupportedf("Gelu approximate=%q", approx)
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return floatMap32("Gelu", x, k32, f) }), nil
}

// geluTanhArg is the tanh approximation's argument √(2/π)·(x + 0.044715·x³).
func geluTanhArg(v float64) float64 { return math.Sqrt(2/math.Pi) * (v + 0.044715*v*v*v) }

// geluTanhSlice computes 0.5·x·(1 + tanh u) as x·sigmoid(2u), which is
// the same function without cancellation for negative u; u is computed
// in float64, as sigmoid magnifies its rounding.
func geluTanhSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = v * elemSigmoidf(2*geluTanhArg(float64(v)))
	}
}

// --- Elu, Selu, Celu, Softplus, ThresholdedRelu, Shrink --------------------

func buildElu(n *node, at *EluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := float64(at.Alpha)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("Elu", x, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return a * math.Expm1(v)
		})
	}), nil
}

func buildSelu(n *node, at *SeluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a, g := float64(at.Alpha), float64(at.Gamma)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("Selu", x, func(v float64) float64 {
			if v > 0 {
				return g * v
			}
			return g * a * math.Expm1(v)
		})
	}), nil
}

// buildCelu implements Celu: max(0, x) + min(0, alpha·(e**(x/alpha) - 1)).
func buildCelu(n *node, at *EluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := float64(at.Alpha)
	if a == 0 {
		return nil, fmt.Errorf("Celu alpha must not be 0")
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("Celu", x, func(v float64) float64 { return max(0, v) + min(0, a*math.Expm1(v/a)) })
	}), nil
}

// softplus is log(1 + e**x), computed without overflow.
func softplus(v float64) float64 {
	if v > 0 {
		return v + math.Log1p(math.Exp(-v))
	}
	return math.Log1p(math.Exp(v))
}

func buildThresholdedRelu(n *node, at *ThresholdedReluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := float64(at.Alpha)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("ThresholdedRelu", x, func(v float64) float64 {
			if v > a {
				return v
			}
			return 0
		})
	}), nil
}

// buildShrink implements Shrink on every numeric type: x+bias below
// -lambd, x-bias above lambd, 0 between; integers compute in float64 and
// convert back.
func buildShrink(n *node, at *ShrinkAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	l, b := float64(at.Lambd), float64(at.Bias)
	f := func(v float64) float64 {
		switch {
		case v < -l:
			return v + b
		case v > l:
			return v - b
		}
		return 0
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.DType.IsFloat() {
			return floatMap("Shrink", x, f)
		}
		var out any
		switch d := x.Data.(type) {
		case []int8:
			out = shrinkInt(d, f)
		case []uint8:
			out = shrinkInt(d, f)
		case []int16:
			out = shrinkInt(d, f)
		case []uint16:
			out = shrinkInt(d, f)
		case []int32:
			out = shrinkInt(d, f)
		case []uint32:
			out = shrinkInt(d, f)
		case []int64:
			out = shrinkInt(d, f)
		case []uint64:
			out = shrinkInt(d, f)
		default:
			return nil, inputErrorf("Shrink does not take %v", x.DType)
		}
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
	}), nil
}

func shrinkInt[T tensor.Integer](x []T, f func(float64) float64) []T {
	r := make([]T, len(x))
	for i, v := range x {
		r[i] = T(f(float64(v)))
	}
	return r
}

// --- PRelu ------------------------------------------------------------------

// buildPRelu implements PRelu from opset 7: slope broadcasts to X's shape
// (unidirectionally); y = x for x >= 0, slope·x below.
func buildPRelu(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, s := in[0], in[1]
		if err := sameType("PRelu", x, s); err != nil {
			return nil, err
		}
		if bs, err := broadcastShape(x.Shape, s.Shape); err != nil || !equalShape(bs, x.Shape) {
			return nil, inputErrorf("PRelu slope of shape %s does not broadcast to the input's %s", tensor.ShapeString(s.Shape), tensor.ShapeString(x.Shape))
		}
		var t *tensor.Tensor
		var err error
		switch xd := x.Data.(type) {
		case []float32:
			t, err = prelu(xd, s.Data.([]float32), x.Shape, s.Shape)
		case []float64:
			t, err = prelu(xd, s.Data.([]float64), x.Shape, s.Shape)
		case []tensor.F16:
			t, err = prelu(tensor.HalfToFloat32(xd), tensor.HalfToFloat32(s.Data.([]tensor.F16)), x.Shape, s.Shape)
			t = elemToHalf(t, tensor.Float16)
		case []tensor.BF16:
			t, err = prelu(tensor.HalfToFloat32(xd), tensor.HalfToFloat32(s.Data.([]tensor.BF16)), x.Shape, s.Shape)
			t = elemToHalf(t, tensor.BFloat16)
		case []int8:
			t, err = prelu(xd, s.Data.([]int8), x.Shape, s.Shape)
		case []int16:
			t, err = prelu(xd, s.Data.([]int16), x.Shape, s.Shape)
		case []int32:
			t, err = prelu(xd, s.Data.([]int32), x.Shape, s.Shape)
		case []int64:
			t, err = prelu(xd, s.Data.([]int64), x.Shape, s.Shape)
		case []uint8:
			t, err = prelu(xd, s.Data.([]uint8), x.Shape, s.Shape)
		case []uint16:
			t, err = prelu(xd, s.Data.([]uint16), x.Shape, s.Shape)
		case []uint32:
			t, err = prelu(xd, s.Data.([]uint32), x.Shape, s.Shape)
		case []uint64:
			t, err = prelu(xd, s.Data.([]uint64), x.Shape, s.Shape)
		default:
			return nil, inputErrorf("PRelu does not take %v", x.DType)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}, nil
}

func prelu[T tensor.Numeric](x, s []T, xs, ss []int) (*tensor.Tensor, error) {
	shape, r, err := elemMap2(x, s, xs, ss, func(r, x, s []T, ix, is int) {
		n := len(r)
		switch {
		case ix == 1 && is == 1:
			x, s := x[:n], s[:n]
			for i, v := range x {
				if v < 0 {
					v *= s[i]
				}
				r[i] = v
			}
		case ix == 1: // one slope for the run (per channel, or a scalar)
			x, a := x[:n], s[0]
			for i, v := range x {
				if v < 0 {
					v *= a
				}
				r[i] = v
			}
		default: // x broadcast: cannot happen (slope broadcasts to x), kept total
			pa, pb := 0, 0
			for i := range r {
				v := x[pa]
				if v < 0 {
					v *= s[pb]
				}
				r[i] = v
				pa += ix
				pb += is
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// --- Clip -------------------------------------------------------------------

// buildClip6 implements Clip before opset 11: min/max attributes.
func buildClip6(n *node, at *ClipAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	lo32, hi32 := at.Min, at.Max
	lo, hi := float64(lo32), float64(hi32)
	k32 := func(dst, src []float32) { clipSlice(dst, src, lo32, hi32) }
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap32("Clip", x, k32, func(v float64) float64 { return min(max(v, lo), hi) })
	}), nil
}

// buildClip implements Clip from opset 11: optional min and max inputs,
// scalars of the input's type.
func buildClip(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(1, 3, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var lo, hi *tensor.Tensor
		if len(in) > 1 {
			lo = in[1]
		}
		if len(in) > 2 {
			hi = in[2]
		}
		for _, b := range []*tensor.Tensor{lo, hi} {
			if b != nil && (b.DType != x.DType || b.Len() != 1) {
				return nil, inputErrorf("Clip bounds must be scalars of the input's type %v", x.DType)
			}
		}
		var out any
		switch d := x.Data.(type) {
		case []float32:
			out = clip(d, lo, hi)
		case []float64:
			out = clip(d, lo, hi)
		case []int8:
			out = clip(d, lo, hi)
		case []uint8:
			out = clip(d, lo, hi)
		case []int16:
			out = clip(d, lo, hi)
		case []uint16:
			out = clip(d, lo, hi)
		case []int32:
			out = clip(d, lo, hi)
		case []uint32:
			out = clip(d, lo, hi)
		case []int64:
			out = clip(d, lo, hi)
		case []uint64:
			out = clip(d, lo, hi)
		case []tensor.F16, []tensor.BF16:
			// Clipping selects values: through float32 and back is exact.
			w := elemHalfTo32(x)
			r := clip(w.Data.([]float32), halfBoundTo32(lo), halfBoundTo32(hi))
			return []*tensor.Tensor{elemToHalf(&tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: r}, x.DType)}, nil
		default:
			return nil, inputErrorf("Clip does not take %v", x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

func halfBoundTo32(b *tensor.Tensor) *tensor.Tensor {
	if b == nil {
		return nil
	}
	return elemHalfTo32(b)
}

// clip bounds x to [lo, hi] (absent bounds do not bound); when lo > hi
// every value becomes hi, as ONNX (min then max) specifies. NaN stays NaN.
func clip[T tensor.Numeric](x []T, lo, hi *tensor.Tensor) []T {
	r := make([]T, len(x))
	switch {
	case lo != nil && hi != nil:
		clipSlice(r, x, lo.Data.([]T)[0], hi.Data.([]T)[0])
	case lo != nil:
		l := lo.Data.([]T)[0]
		for i, v := range x {
			r[i] = max(v, l)
		}
	case hi != nil:
		h := hi.Data.([]T)[0]
		for i, v := range x {
			r[i] = min(v, h)
		}
	default:
		copy(r, x)
	}
	return r
}

func clipSlice[T tensor.Numeric](dst, src []T, lo, hi T) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = min(max(v, lo), hi)
	}
}

// --- Dropout ------------------------------------------------------------------

// buildDropout7 implements Dropout of opsets 7 to 11 as inference runs it:
// the identity, and a mask of ones (of the input's type before opset 10,
// BOOL from it).
func buildDropout7(n *node, _ *DropoutAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 2); err != nil {
		return nil, err
	}
	boolMask := n.opset >= 10
	mask := len(n.pb.Outputs) > 1 && n.pb.Outputs[1] != ""
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if !x.DType.IsFloat() {
			return nil, inputErrorf("Dropout does not take %v", x.DType)
		}
		if !mask {
			return []*tensor.Tensor{x}, nil
		}
		var m *tensor.Tensor
		if boolMask {
			m = dropoutMask(x.Shape)
		} else {
			m = dropoutOnes(x)
		}
		return []*tensor.Tensor{x, m}, nil
	}, nil
}

// buildDropout implements Dropout from opset 12: ratio and training_mode
// are inputs. Without training_mode (or with it false), or with ratio 0,
// the output is the input and the mask all true. Training mode with a
// nonzero ratio would drop random elements: quantserve does not run
// random operators, so that is refused (at load when both inputs are
// constants).
func buildDropout(n *node, _ *Dropout12Attrs) (opFunc, error) {
	if err := n.checkArity(1, 3, 1, 2); err != nil {
		return nil, err
	}
	mask := len(n.pb.Outputs) > 1 && n.pb.Outputs[1] != ""
	check := func(ratio, training *tensor.Tensor) error {
		if training == nil {
			return nil
		}
		tb, ok := training.Data.([]bool)
		if !ok || len(tb) != 1 {
			return inputErrorf("Dropout training_mode must be a BOOL scalar, got %v%s", training.DType, tensor.ShapeString(training.Shape))
		}
		if !tb[0] {
			return nil
		}
		r := 0.5
		if ratio != nil {
			if !ratio.DType.IsFloat() || ratio.Len() != 1 {
				return inputErrorf("Dropout ratio must be a floating-point scalar, got %v%s", ratio.DType, tensor.ShapeString(ratio.Shape))
			}
			r = ratio.Float64s()[0]
		}
		if r == 0 {
			return nil
		}
		return unsupportedf("Dropout in training mode with ratio %v (random operators are not run)", r)
	}
	if len(n.consts) > 2 && n.consts[2] != nil { // training_mode known at load
		ratio := n.consts[1]
		if ratio != nil || n.pb.Inputs[1] == "" { // and the ratio too (or absent)
			if err := check(ratio, n.consts[2]); err != nil {
				return nil, err
			}
		}
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if !x.DType.IsFloat() {
			return nil, inputErrorf("Dropout does not take %v", x.DType)
		}
		var ratio, training *tensor.Tensor
		if len(in) > 1 {
			ratio = in[1]
		}
		if len(in) > 2 {
			training = in[2]
		}
		if err := check(ratio, training); err != nil {
			return nil, err
		}
		if !mask {
			return []*tensor.Tensor{x}, nil
		}
		return []*tensor.Tensor{x, dropoutMask(x.Shape)}, nil
	}, nil
}

func dropoutMask(shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape) // the input's shape: already valid
	m := make([]bool, n)
	for i := range m {
		m[i] = true
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: shape, Data: m}
}

// dropoutOnes is the opset 7–9 mask: ones of x's type.
func dropoutOnes(x *tensor.Tensor) *tensor.Tensor {
	var out any
	switch d := x.Data.(type) {
	case []float32:
		r := make([]float32, len(d))
		for i := range r {
			r[i] = 1
		}
		out = r
	case []float64:
		r := make([]float64, len(d))
		for i := range r {
			r[i] = 1
		}
		out = r
	case []tensor.F16:
		r := make([]tensor.F16, len(d))
		for i := range r {
			r[i] = tensor.F16From(1)
		}
		out = r
	case []tensor.BF16:
		r := make([]tensor.BF16, len(d))
		for i := range r {
			r[i] = tensor.BF16From(1)
		}
		out = r
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}
}
