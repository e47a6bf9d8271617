package training

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: Domain, Type: "Adagrad", Since: 1, Fold: true}, buildAdagrad)
}

// AdagradAttrs are Adagrad's attributes.
type AdagradAttrs struct {
	DecayFactor     float32 `onnx:"decay_factor" default:"0"`
	Epsilon         float32 `onnx:"epsilon" default:"0"`
	NormCoefficient float32 `onnx:"norm_coefficient" default:"0"`
}

// adagrad is a compiled Adagrad step over k tensors.
type adagrad struct {
	k                int
	decay, eps, norm float64
}

func buildAdagrad(n *ops.Node, a *AdagradAttrs) (ops.Operator, error) {
	k, err := optimizerGroups(n, 3, 2)
	if err != nil {
		return nil, err
	}
	return &adagrad{k: k, decay: float64(a.DecayFactor), eps: float64(a.Epsilon), norm: float64(a.NormCoefficient)}, nil
}

// Run takes R, T, then X, G and H (the accumulated squared gradients) of
// each tensor, and returns the new X and H of each.
func (op *adagrad) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, err := optimizerScalars("Adagrad", in)
	if err != nil {
		return nil, err
	}
	k := op.k
	var v [3][][]float64
	for g := range v {
		if v[g], err = optimizerTensors("Adagrad", in, k, g); err != nil {
			return nil, err
		}
	}
	rate := r / (1 + float64(t)*op.decay)
	outs := make([]*tensor.Tensor, 2*k)
	for i := range k {
		x, gr, h := v[0][i], v[1][i], v[2][i]
		xn, hn := make([]float64, len(x)), make([]float64, len(x))
		for j := range x {
			if j%ops.TickEvery == 0 { // a look before each stretch of TickEvery
				if err := c.Tick(ops.TickEvery); err != nil {
					return nil, err
				}
			}
			g := op.norm*x[j] + gr[j]
			hn[j] = h[j] + g*g
			xn[j] = x[j] - rate*g/(math.Sqrt(hn[j])+op.eps)
		}
		outs[i], outs[k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], hn)
	}
	return outs, nil
}
