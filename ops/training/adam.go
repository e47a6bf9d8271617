package training

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: Domain, Type: "Adam", Since: 1, Fold: true}, buildAdam)
}

// AdamAttrs are Adam's attributes.
type AdamAttrs struct {
	Alpha               float32 `onnx:"alpha" default:"0.9"`
	Beta                float32 `onnx:"beta" default:"0.999"`
	Epsilon             float32 `onnx:"epsilon" default:"0"`
	NormCoefficient     float32 `onnx:"norm_coefficient" default:"0"`
	NormCoefficientPost float32 `onnx:"norm_coefficient_post" default:"0"`
}

// adam is a compiled Adam step over k tensors.
type adam struct {
	k                int
	alpha, beta, eps float64
	norm, post       float64
}

func buildAdam(n *ops.Node, a *AdamAttrs) (ops.Operator, error) {
	k, err := optimizerGroups(n, 4, 3)
	if err != nil {
		return nil, err
	}
	return &adam{k: k, alpha: float64(a.Alpha), beta: float64(a.Beta), eps: float64(a.Epsilon),
		norm: float64(a.NormCoefficient), post: float64(a.NormCoefficientPost)}, nil
}

// Run takes R, T, then X, G, V (the gradients' running mean) and H (their
// squares' running mean) of each tensor, and returns the new X, V and H
// of each.
func (op *adam) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, err := optimizerScalars("Adam", in)
	if err != nil {
		return nil, err
	}
	k := op.k
	var v [4][][]float64
	for g := range v {
		if v[g], err = optimizerTensors("Adam", in, k, g); err != nil {
			return nil, err
		}
	}
	alpha, beta := op.alpha, op.beta
	rate := r
	if t > 0 {
		rate = r * math.Sqrt(1-math.Pow(beta, float64(t))) / (1 - math.Pow(alpha, float64(t)))
	}
	outs := make([]*tensor.Tensor, 3*k)
	for i := range k {
		x, gr, m, h := v[0][i], v[1][i], v[2][i], v[3][i]
		xn, mn, hn := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
		for j := range x {
			if j%ops.TickEvery == 0 { // a look before each stretch of TickEvery
				if err := c.Tick(ops.TickEvery); err != nil {
					return nil, err
				}
			}
			g := op.norm*x[j] + gr[j]
			mn[j] = alpha*m[j] + (1-alpha)*g
			hn[j] = beta*h[j] + (1-beta)*g*g
			xn[j] = (1 - op.post) * (x[j] - rate*mn[j]/(math.Sqrt(hn[j])+op.eps))
		}
		outs[i], outs[k+i], outs[2*k+i] = optimizerOut(in[2+i], xn), optimizerOut(in[2+i], mn), optimizerOut(in[2+i], hn)
	}
	return outs, nil
}
