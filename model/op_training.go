package model

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// The optimizer steps of the ai.onnx.preview.training domain: one
// deterministic update of a list of tensors from their gradients and
// optimizer state, as a training graph exported to ONNX runs them.

const trainingDomain = "ai.onnx.preview.training"

func init() {
	register(Descriptor{Domain: trainingDomain, Type: "Adagrad", Since: 1, Fold: true}, buildAdagrad)
	register(Descriptor{Domain: trainingDomain, Type: "Adam", Since: 1, Fold: true}, buildAdam)
	register(Descriptor{Domain: trainingDomain, Type: "Momentum", Since: 1, Fold: true}, buildMomentum)
}

// AdagradAttrs are Adagrad's attributes.
type AdagradAttrs struct {
	DecayFactor     float32 `onnx:"decay_factor" default:"0"`
	Epsilon         float32 `onnx:"epsilon" default:"0"`
	NormCoefficient float32 `onnx:"norm_coefficient" default:"0"`
}

// AdamAttrs are Adam's attributes.
type AdamAttrs struct {
	Alpha               float32 `onnx:"alpha" default:"0.9"`
	Beta                float32 `onnx:"beta" default:"0.999"`
	Epsilon             float32 `onnx:"epsilon" default:"0"`
	NormCoefficient     float32 `onnx:"norm_coefficient" default:"0"`
	NormCoefficientPost float32 `onnx:"norm_coefficient_post" default:"0"`
}

// MomentumAttrs are Momentum's attributes (all required).
type MomentumAttrs struct {
	Alpha           *float32 `onnx:"alpha"`
	Beta            *float32 `onnx:"beta"`
	Mode            string   `onnx:"mode"`
	NormCoefficient *float32 `onnx:"norm_coefficient"`
}

// optimizerGroups checks an optimizer node's arity: R, T, then groups
// tensor lists of k tensors each (X, G, and the state), and outs output
// lists of k. It returns k.
func optimizerGroups(n *node, groups, outs int) (int, error) {
	nin := len(n.pb.Inputs) - 2
	if nin <= 0 || nin%groups != 0 {
		return 0, fmt.Errorf("has %d inputs, takes R, T and %d lists of equal length", len(n.pb.Inputs), groups)
	}
	k := nin / groups
	if len(n.pb.Outputs) != k*outs {
		return 0, fmt.Errorf("optimizes %d tensors, so has %d outputs, not %d", k, k*outs, len(n.pb.Outputs))
	}
	return k, nil
}

// optimizerScalars reads the learning rate R and update count T.
func optimizerScalars(op string, in []*tensor.Tensor) (r float64, t int64, err error) {
	if in[0] == nil || in[1] == nil {
		return 0, 0, inputErrorf("%s needs R and T", op)
	}
	if in[0].Len() != 1 || !in[0].DType.IsFloat() {
		return 0, 0, inputErrorf("%s: R must be one float, got %v %s", op, in[0].DType, tensor.ShapeString(in[0].Shape))
	}
	if in[1].Len() != 1 || in[1].DType != tensor.Int64 {
		return 0, 0, inputErrorf("%s: T must be one INT64, got %v %s", op, in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	return in[0].Float64s()[0], in[1].Data.([]int64)[0], nil
}

// optimizerTensors returns the k tensors of group g as float64 values,
// checking that each matches the shape and type of its X.
func optimizerTensors(op string, in []*tensor.Tensor, k, g int) ([][]float64, error) {
	out := make([][]float64, k)
	for i := range k {
		x, t := in[2+i], in[2+g*k+i]
		if x == nil || t == nil {
			return nil, inputErrorf("%s: tensor %d is missing", op, 2+g*k+i)
		}
		if t.DType != tensor.Float32 && t.DType != tensor.Float64 {
			return nil, inputErrorf("%s takes FP32 or FP64 tensors, got %v", op, t.DType)
		}
		if t.DType != x.DType || !equalShape(t.Shape, x.Shape) {
			return nil, inputErrorf("%s: input %d is %v %s, its X is %v %s", op, 2+g*k+i, t.DType, tensor.ShapeString(t.Shape), x.DType, tensor.ShapeString(x.Shape))
		}
		out[i] = t.Float64s()
	}
	return out, nil
}

// optimizerOut converts v back to x's type and shape.
func optimizerOut(x *tensor.Tensor, v []float64) *tensor.Tensor {
	if x.DType == tensor.Float64 {
		return &tensor.Tensor{DType: tensor.Float64, Shape: x.Shape, Data: v}
	}
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return &tensor.Tensor{DType: tensor.Float32, Shape: x.Shape, Data: f}
}

func buildAdagrad(n *node, a *AdagradAttrs) (opFunc, error) {
	k, err := optimizerGroups(n, 3, 2)
	if err != nil {
		return nil, err
	}
	decay, eps, norm := float64(a.DecayFactor), float64(a.Epsilon), float64(a.NormCoefficient)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		r, t, err := optimizerScalars("Adagrad", in)
		if err != nil {
			return nil, err
		}
		var v [3][][]float64
		for g := range v {
			if v[g], err = optimizerTensors("Adagrad", in, k, g); err != nil {
				return nil, err
			}
		}
		rate := r / (1 + float64(t)*decay)
		outs := make([]*tensor.Tensor, 2*k)
		for i := range k {
			x, gr, h := v[0][i], v[1][i], v[2][i]
			xn, hn := make([]float64, len(x)), make([]float64, len(x))
			for j := range x {
				g := norm*x[j] + gr[j]
				hn[j] = h[j] + g*g
				xn[j] = x[j] - rate*g/(math.Sqrt(hn[j])+eps)
			}
			outs[i], outs[k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], hn)
		}
		return outs, nil
	}, nil
}

func buildAdam(n *node, a *AdamAttrs) (opFunc, error) {
	k, err := optimizerGroups(n, 4, 3)
	if err != nil {
		return nil, err
	}
	alpha, beta, eps := float64(a.Alpha), float64(a.Beta), float64(a.Epsilon)
	norm, post := float64(a.NormCoefficient), float64(a.NormCoefficientPost)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		r, t, err := optimizerScalars("Adam", in)
		if err != nil {
			return nil, err
		}
		var v [4][][]float64
		for g := range v {
			if v[g], err = optimizerTensors("Adam", in, k, g); err != nil {
				return nil, err
			}
		}
		rate := r
		if t > 0 {
			rate = r * math.Sqrt(1-math.Pow(beta, float64(t))) / (1 - math.Pow(alpha, float64(t)))
		}
		outs := make([]*tensor.Tensor, 3*k)
		for i := range k {
			x, gr, m, h := v[0][i], v[1][i], v[2][i], v[3][i]
			xn, mn, hn := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
			for j := range x {
				g := norm*x[j] + gr[j]
				mn[j] = alpha*m[j] + (1-alpha)*g
				hn[j] = beta*h[j] + (1-beta)*g*g
				xn[j] = (1 - post) * (x[j] - rate*mn[j]/(math.Sqrt(hn[j])+eps))
			}
			outs[i], outs[k+i], outs[2*k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], mn), optimizerOut(in[2+i], hn)
		}
		return outs, nil
	}, nil
}

func buildMomentum(n *node, a *MomentumAttrs) (opFunc, error) {
	if a.Alpha == nil || a.Beta == nil || a.NormCoefficient == nil {
		return nil, fmt.Errorf("needs the attributes alpha, beta and norm_coefficient")
	}
	var nesterov bool
	switch a.Mode {
	case "standard":
	case "nesterov":
		nesterov = true
	default:
		return nil, fmt.Errorf("mode %q is neither \"standard\" nor \"nesterov\"", a.Mode)
	}
	k, err := optimizerGroups(n, 3, 2)
	if err != nil {
		return nil, err
	}
	alpha, beta, norm := float64(*a.Alpha), float64(*a.Beta), float64(*a.NormCoefficient)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		r, t, err := optimizerScalars("Momentum", in)
		if err != nil {
			return nil, err
		}
		var v [3][][]float64
		for g := range v {
			if v[g], err = optimizerTensors("Momentum", in, k, g); err != nil {
				return nil, err
			}
		}
		b := beta
		if t <= 0 {
			b = 1 // the first update takes the whole gradient
		}
		outs := make([]*tensor.Tensor, 2*k)
		for i := range k {
			x, gr, m := v[0][i], v[1][i], v[2][i]
			xn, mn := make([]float64, len(x)), make([]float64, len(x))
			for j := range x {
				g := norm*x[j] + gr[j]
				mn[j] = alpha*m[j] + b*g
				if nesterov {
					xn[j] = x[j] - r*(g+alpha*mn[j])
				} else {
					xn[j] = x[j] - r*mn[j]
				}
			}
			outs[i], outs[k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], mn)
		}
		return outs, nil
	}, nil
}
