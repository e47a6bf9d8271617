package contrib

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: "com.microsoft", Type: "SkipLayerNormalization", Since: 1, Fold: true}, buildSkipLayerNorm)
}

// SkipLayerNormAttrs are the attributes of SkipLayerNormalization and
// SkipSimplifiedLayerNormalization.
type SkipLayerNormAttrs struct {
	Epsilon float32 `onnx:"epsilon" default:"1e-12"`
}

// skipLayerNorm implements SkipLayerNormalization and, simplified,
// SkipSimplifiedLayerNormalization: the residual sum s = (input + skip) +
// bias, then the layer normalization of each row of s (over the last
// axis, hidden),
//
//	output = (s - mean)·inv_std_var·gamma + beta,  inv_std_var = 1/√(var + epsilon)
//
// or, simplified, the RMS normalization output = s·inv_std_var·gamma with
// inv_std_var = 1/√(mean(s²) + epsilon).
//
// input is [batch, sequence, hidden] or [tokens, hidden]; skip has
// input's shape or, for a 3-D input, [1, sequence, hidden] or [sequence,
// hidden] (the same residual for every batch item); gamma, beta and bias
// are [hidden] (beta, SkipLayerNormalization's input 3, and bias, its
// input 4 or the simplified form's input 3, are optional). The optional
// outputs are mean and inv_std_var (FLOAT, input's shape with a last
// dimension of 1; the simplified form's mean is 0, as ONNX Runtime gives
// it) and input_skip_bias_sum, s. The sum is computed in float32
// (FLOAT16 values converted first), as ONNX Runtime computes it, on the
// engine's AddBias kernel; the statistics and the normalization in
// float64, each value rounded once.
type skipLayerNorm struct {
	op         string
	simplified bool
	eps        float64
	biasIn     int     // the input index of bias
	outs       int     // how many outputs the node has
	want       [4]bool // which of them the graph reads
}

func buildSkipLayerNorm(n *ops.Node, at *SkipLayerNormAttrs) (ops.Operator, error) {
	return newSkipLayerNorm(n, at, false)
}

func newSkipLayerNorm(n *ops.Node, at *SkipLayerNormAttrs, simplified bool) (ops.Operator, error) {
	op := &skipLayerNorm{op: "SkipLayerNormalization", simplified: simplified, eps: float64(at.Epsilon), biasIn: 4}
	maxIn := 5
	if simplified {
		op.op, op.biasIn, maxIn = "SkipSimplifiedLayerNormalization", 3, 4
	}
	if err := n.CheckArity(3, maxIn, 1, 4); err != nil {
		return nil, err
	}
	if !(at.Epsilon >= 0) {
		return nil, fmt.Errorf("epsilon %v is not a nonnegative number", at.Epsilon)
	}
	op.outs = len(n.Outputs)
	for i, name := range n.Outputs {
		op.want[i] = name != ""
	}
	return op, nil
}

func (op *skipLayerNorm) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, skip, g := in[0], in[1], in[2]
	var beta, b *tensor.Tensor
	if !op.simplified {
		beta = ops.Optional(in, 3)
	}
	b = ops.Optional(in, op.biasIn)
	if err := sameType(op.op, x, skip, g, beta, b); err != nil {
		return nil, err
	}
	if err := op.checkShapes(x, skip); err != nil {
		return nil, err
	}
	hidden := x.Shape[x.Rank()-1]
	xs, err := values(op.op, "input", x)
	if err != nil {
		return nil, err
	}
	ss, err := values(op.op, "skip", skip)
	if err != nil {
		return nil, err
	}
	vec := func(t *tensor.Tensor, what string) ([]float32, error) {
		if t == nil {
			return nil, nil
		}
		if err := vector(op.op, what, t, hidden); err != nil {
			return nil, err
		}
		return values(op.op, what, t)
	}
	gamma, err := vec(g, "gamma")
	if err != nil {
		return nil, err
	}
	betas, err := vec(beta, "beta")
	if err != nil {
		return nil, err
	}
	bias, err := vec(b, "bias")
	if err != nil {
		return nil, err
	}

	rows := len(xs) / hidden
	sum, y := slices.Clone(xs), make([]float32, len(xs))
	mean, inv := make([]float32, rows), make([]float32, rows)
	add := c.Engine().Table().AddBias
	err = rowBlocks(c, rows, hidden, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			s := sum[r*hidden : (r+1)*hidden]
			o := r * hidden % len(ss)
			add(s, ss[o:o+hidden], bias) // (input + skip) + bias
			mean[r], inv[r] = op.normalize(y[r*hidden:(r+1)*hidden], s, gamma, betas)
		}
	})
	if err != nil {
		return nil, err
	}
	stat := slices.Clone(x.Shape)
	stat[len(stat)-1] = 1
	outs := []*tensor.Tensor{result(x.DType, x.Shape, y), nil, nil, nil}
	if op.want[1] {
		outs[1] = tensor.From(stat, mean)
	}
	if op.want[2] {
		outs[2] = tensor.From(slices.Clone(stat), inv)
	}
	if op.want[3] {
		outs[3] = result(x.DType, x.Shape, sum)
	}
	return outs[:op.outs], nil
}

// checkShapes checks input's rank and hidden size and skip's shape.
func (op *skipLayerNorm) checkShapes(x, skip *tensor.Tensor) error {
	if r := x.Rank(); r != 2 && r != 3 || x.Shape[r-1] == 0 {
		return ops.InputErrorf("%s's input must be [batch, sequence, hidden] or [tokens, hidden] with hidden > 0, got %s", op.op, tensor.ShapeString(x.Shape))
	}
	if slices.Equal(skip.Shape, x.Shape) {
		return nil
	}
	if x.Rank() == 2 {
		return ops.InputErrorf("%s's skip must have input's shape %s, got %s", op.op, tensor.ShapeString(x.Shape), tensor.ShapeString(skip.Shape))
	}
	one := []int{1, x.Shape[1], x.Shape[2]}
	if slices.Equal(skip.Shape, one) || slices.Equal(skip.Shape, x.Shape[1:]) {
		return nil
	}
	return ops.InputErrorf("%s's skip must have shape %s, %s or %s, got %s", op.op, tensor.ShapeString(x.Shape),
		tensor.ShapeString(one), tensor.ShapeString(x.Shape[1:]), tensor.ShapeString(skip.Shape))
}

// normalize writes the normalization of the row s to y and returns the
// row's mean (0 when simplified) and 1/√(variance + epsilon) (of the mean
// square when simplified).
func (op *skipLayerNorm) normalize(y, s, gamma, beta []float32) (mean, inv float32) {
	n := float64(len(s))
	var m, v float64
	if op.simplified {
		for _, t := range s {
			v += float64(t) * float64(t)
		}
		v /= n
	} else {
		for _, t := range s {
			m += float64(t)
		}
		m /= n
		for _, t := range s {
			d := float64(t) - m
			v += d * d
		}
		v /= n
	}
	iv := 1 / math.Sqrt(v+op.eps)
	for j, t := range s {
		z := (float64(t) - m) * iv * float64(gamma[j])
		if beta != nil {
			z += float64(beta[j])
		}
		y[j] = float32(z)
	}
	return float32(m), float32(iv)
}
