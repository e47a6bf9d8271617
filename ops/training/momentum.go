package training

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: Domain, Type: "Momentum", Since: 1, Fold: true}, buildMomentum)
}

// MomentumAttrs are Momentum's attributes (all required).
type MomentumAttrs struct {
	Alpha           *float32 `onnx:"alpha"`
	Beta            *float32 `onnx:"beta"`
	Mode            string   `onnx:"mode"`
	NormCoefficient *float32 `onnx:"norm_coefficient"`
}

// momentum is a compiled Momentum step over k tensors.
type momentum struct {
	k                 int
	alpha, beta, norm float64
	nesterov          bool
}

func buildMomentum(n *ops.Node, a *MomentumAttrs) (ops.Operator, error) {
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
	return &momentum{k: k, alpha: float64(*a.Alpha), beta: float64(*a.Beta), norm: float64(*a.NormCoefficient), nesterov: nesterov}, nil
}

// Run takes R, T, then X, G and V (the momentum) of each tensor, and
// returns the new X and V of each.
func (op *momentum) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, err := optimizerScalars("Momentum", in)
	if err != nil {
		return nil, err
	}
	k := op.k
	var v [3][][]float64
	for g := range v {
		if v[g], err = optimizerTensors("Momentum", in, k, g); err != nil {
			return nil, err
		}
	}
	alpha, b := op.alpha, op.beta
	if t <= 0 {
		b = 1 // the first update takes the whole gradient
	}
	outs := make([]*tensor.Tensor, 2*k)
	for i := range k {
		x, gr, m := v[0][i], v[1][i], v[2][i]
		xn, mn := make([]float64, len(x)), make([]float64, len(x))
		for j := range x {
			if j%ops.TickEvery == 0 { // a look before each stretch of TickEvery
				if err := c.Tick(ops.TickEvery); err != nil {
					return nil, err
				}
			}
			g := op.norm*x[j] + gr[j]
			mn[j] = alpha*m[j] + b*g
			if op.nesterov {
				xn[j] = x[j] - r*(g+alpha*mn[j])
			} else {
				xn[j] = x[j] - r*mn[j]
			}
		}
		outs[i], outs[k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], mn)
	}
	return outs, nil
}
