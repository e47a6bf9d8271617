package norm

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "LRN", Since: 1, Fold: true}, buildLRN)
}

// LRNAttrs are LRN's attributes.
type LRNAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.0001"`
	Beta  float32 `onnx:"beta" default:"0.75"`
	Bias  float32 `onnx:"bias" default:"1"`
	Size  *int64  `onnx:"size"`
}

// lrnOp is a compiled LRN.
type lrnOp struct {
	size              int
	alpha, beta, bias float64
}

func buildLRN(n *ops.Node, at *LRNAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Size == nil || *at.Size < 1 || *at.Size > tensor.MaxElements {
		return nil, fmt.Errorf("LRN needs size >= 1")
	}
	return &lrnOp{size: int(*at.Size), alpha: float64(at.Alpha), beta: float64(at.Beta), bias: float64(at.Bias)}, nil
}

func (o *lrnOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("LRN takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
	}
	N, C, S := x.Shape[0], x.Shape[1], ops.ProdInts(x.Shape[2:])
	return ops.Result(normRun("LRN", x,
		func(v []float32) ([]float32, error) { return lrn(v, N, C, S, o.size, o.alpha, o.beta, o.bias, c) },
		func(v []float64) ([]float64, error) { return lrn(v, N, C, S, o.size, o.alpha, o.beta, o.bias, c) }))
}

// lrn divides each element by (bias + alpha/size · Σ x²)^beta, the sum
// over the channels from c − ⌊(size−1)/2⌋ to c + ⌈(size−1)/2⌉.
func lrn[T tensor.Float](x []T, N, C, S, size int, alpha, beta, bias float64, oc *ops.Context) ([]T, error) {
	y := make([]T, len(x))
	lo, hi := (size-1)/2, (size-1)-(size-1)/2
	acc := make([]float64, S)
	k := alpha / float64(size)
	for i := 0; i < N; i++ {
		img := x[i*C*S : (i+1)*C*S]
		for c := 0; c < C; c++ {
			c0, c1 := max(0, c-lo), min(C-1, c+hi)
			if err := oc.Tick((c1 - c0 + 2) * S); err != nil {
				return nil, err
			}
			clear(acc)
			for c2 := c0; c2 <= c1; c2++ {
				for j, v := range img[c2*S : (c2+1)*S] {
					acc[j] += float64(v) * float64(v)
				}
			}
			ys := y[(i*C+c)*S : (i*C+c+1)*S]
			for j, v := range img[c*S : (c+1)*S] {
				ys[j] = T(float64(v) * lrnPow(bias+k*acc[j], beta))
			}
		}
	}
	return y, nil
}

// lrnPow returns t^-beta, with the common exponents in square roots.
func lrnPow(t, beta float64) float64 {
	switch beta {
	case 0.75:
		s := math.Sqrt(t)
		return 1 / (s * math.Sqrt(s))
	case 0.5:
		return 1 / math.Sqrt(t)
	case 1:
		return 1 / t
	}
	return math.Pow(t, -beta)
}
