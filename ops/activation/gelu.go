package activation

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Gelu is the Gelu operator.
var Gelu = ops.Op{
	ops.Register(ops.Descriptor{Type: "Gelu", Since: 20, Fold: true}, buildGelu),
}

// quantserve.Gelu is the same operator for the GELU the "gelu" rewrite
// finds spelled out in a model of any opset (rewritten graphs take no
// gradients: autodiff compiles the model as written).
func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "Gelu", Since: 1, Fold: true}, buildGelu)
}

// GeluAttrs are Gelu's attributes.
type GeluAttrs struct {
	Approximate string `onnx:"approximate" default:"none"`
}

// gelu implements Gelu (opset 20): x·Φ(x), or with tanh its tanh
// approximation. Float32 tensors run on the engine's Gelu or GeluTanh
// kernel.
type gelu struct{ tanh bool }

func buildGelu(n *ops.Node, at *GeluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	switch approx := at.Approximate; approx {
	case "none":
		return gelu{}, nil
	case "tanh":
		return gelu{tanh: true}, nil
	default:
		return nil, ops.Unsupportedf("Gelu approximate=%q", approx)
	}
}

func (g gelu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	tb := c.Engine().Table()
	if g.tanh {
		return ops.Result(floatMap32(c, "Gelu", in[0], expCost, tb.GeluTanh, geluTanh))
	}
	k := tb.Gelu
	return ops.Result(floatMap32(c, "Gelu", in[0], expCost, func(dst, src []float32) { k(dst, src, nil) }, geluExact))
}

// geluExact is x·Φ(x) = 0.5·x·erfc(-x/√2).
func geluExact(v float64) float64 { return 0.5 * v * math.Erfc(-v/math.Sqrt2) }

// geluTanh is the tanh approximation 0.5·x·(1 + tanh u) as x·sigmoid(2u).
func geluTanh(v float64) float64 { return v * ops.Sigmoid(2*geluTanhArg(v)) }

// geluTanhArg is the tanh approximation's argument √(2/π)·(x + 0.044715·x³).
func geluTanhArg(v float64) float64 { return math.Sqrt(2/math.Pi) * (v + 0.044715*v*v*v) }
