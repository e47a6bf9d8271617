package model

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Relu", Since: 1, Fold: true}, unaryBuilder("Relu", true))
	register(Descriptor{Type: "Sigmoid", Since: 1, Fold: true}, unaryBuilder("Sigmoid", false))
	register(Descriptor{Type: "Tanh", Since: 1, Fold: true}, unaryBuilder("Tanh", false))
	register(Descriptor{Type: "LeakyRelu", Since: 1, Fold: true}, buildLeakyRelu)
	register(Descriptor{Type: "Gelu", Since: 20, Fold: true}, buildGelu)
	register(Descriptor{Type: "Clip", Since: 1, Until: 10, Fold: true}, buildClip6)
	register(Descriptor{Type: "Clip", Since: 11, Fold: true}, buildClip)
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

func unary(f func(x *tensor.Tensor) (*tensor.Tensor, error)) opFunc {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		t, err := f(in[0])
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{t}, nil
	}
}

func buildLeakyRelu(n *node, at *LeakyReluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	a := float64(at.Alpha)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("LeakyRelu", x, func(v float64) float64 {
			if v < 0 {
				return a * v
			}
			return v
		})
	}), nil
}

// buildGelu implements Gelu (opset 20): x·Φ(x), or its tanh approximation.
func buildGelu(n *node, at *GeluAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	var f func(float64) float64
	switch approx := at.Approximate; approx {
	case "none":
		f = func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
	case "tanh":
		c := math.Sqrt(2 / math.Pi)
		f = func(v float64) float64 { return 0.5 * v * (1 + math.Tanh(c*(v+0.044715*v*v*v))) }
	default:
		return nil, unsupportedf("Gelu approximate=%q", approx)
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) { return floatMap("Gelu", x, f) }), nil
}

// buildClip6 implements Clip before opset 11: min/max attributes.
func buildClip6(n *node, at *ClipAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	lo, hi := float64(at.Min), float64(at.Max)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		return floatMap("Clip", x, func(v float64) float64 { return math.Min(math.Max(v, lo), hi) })
	}), nil
}

// buildClip implements Clip from opset 11: optional min and max inputs.
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
		default:
			return nil, inputErrorf("Clip does not take %v", x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
	}, nil
}

// clip bounds x to [lo, hi]; when lo > hi every value becomes hi, as ONNX
// (min then max) specifies.
func clip[T tensor.Numeric](x []T, lo, hi *tensor.Tensor) []T {
	r := slices.Clone(x)
	if lo != nil {
		l := lo.Data.([]T)[0]
		for i := range r {
			r[i] = max(r[i], l)
		}
	}
	if hi != nil {
		h := hi.Data.([]T)[0]
		for i := range r {
			r[i] = min(r[i], h)
		}
	}
	return r
}

func unaryBuilder(op string, ints bool) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			var out any
			switch d := x.Data.(type) {
			case []float32:
				out = unaryFloat(op, d)
			case []float64:
				out = unaryFloat(op, d)
			case []int8:
				if ints {
					out = relu(d)
				}
			case []int16:
				if ints {
					out = relu(d)
				}
			case []int32:
				if ints {
					out = relu(d)
				}
			case []int64:
				if ints {
					out = relu(d)
				}
			}
			if out == nil {
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
		}, nil
	}
}

func relu[T tensor.Numeric](x []T) []T {
	r := make([]T, len(x))
	for i, v := range x {
		if v > 0 {
			r[i] = v
		}
	}
	return r
}

func unaryFloat[T float32 | float64](op string, x []T) []T {
	r := make([]T, len(x))
	switch op {
	case "Relu":
		for i, v := range x {
			if v > 0 || v != v {
				r[i] = v
			}
		}
	case "Sigmoid":
		for i, v := range x {
			r[i] = T(sigmoid(float64(v)))
		}
	case "Tanh":
		for i, v := range x {
			r[i] = T(math.Tanh(float64(v)))
		}
	}
	return r
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
