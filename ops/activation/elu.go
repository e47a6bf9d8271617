package activation

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// The exponential linear units: Elu, its scaled form Selu, and Celu.
// Elu is the Elu operator.
var Elu = ops.Op{
	ops.Register(ops.Descriptor{Type: "Elu", Since: 1, Fold: true}, buildElu),
}

// Selu is the Selu operator.
var Selu = ops.Op{
	ops.Register(ops.Descriptor{Type: "Selu", Since: 1, Fold: true}, buildSelu),
}

// Celu is the Celu operator.
var Celu = ops.Op{
	ops.Register(ops.Descriptor{Type: "Celu", Since: 12, Fold: true}, buildCelu),
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

// elu implements Elu: x above 0, alpha·(e**x - 1) below.
type elu struct{ alpha float64 }

func buildElu(n *ops.Node, at *EluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return elu{alpha: float64(at.Alpha)}, nil
}

func (e elu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(arith.MapFloat(c, "Elu", in[0], e.f64))
}

func (e elu) f64(v float64) float64 {
	if v > 0 {
		return v
	}
	return e.alpha * math.Expm1(v)
}

// selu implements Selu: gamma·x above 0, gamma·alpha·(e**x - 1) below.
type selu struct{ alpha, gamma float64 }

func buildSelu(n *ops.Node, at *SeluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return selu{alpha: float64(at.Alpha), gamma: float64(at.Gamma)}, nil
}

func (s selu) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(arith.MapFloat(c, "Selu", in[0], s.f64))
}

func (s selu) f64(v float64) float64 {
	if v > 0 {
		return s.gamma * v
	}
	return s.gamma * s.alpha * math.Expm1(v)
}

// celu implements Celu: max(0, x) + min(0, alpha·(e**(x/alpha) - 1)).
type celu struct{ alpha float64 }

func buildCelu(n *ops.Node, at *EluAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Alpha == 0 {
		return nil, fmt.Errorf("Celu alpha must not be 0")
	}
	return celu{alpha: float64(at.Alpha)}, nil
}

func (c celu) Run(oc *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(arith.MapFloat(oc, "Celu", in[0], c.f64))
}

func (c celu) f64(v float64) float64 { return max(0, v) + min(0, c.alpha*math.Expm1(v/c.alpha)) }
