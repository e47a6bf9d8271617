package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// HardSigmoid is the HardSigmoid operator.
var HardSigmoid = ops.Op{
	ops.Register(ops.Descriptor{Type: "HardSigmoid", Since: 1, Fold: true}, buildHardSigmoid),
}

// HardSwish is the HardSwish operator.
var HardSwish = ops.Op{
	ops.Register(ops.Descriptor{Type: "HardSwish", Since: 14, Fold: true}, floatBuilder("HardSwish", expCost, hardSwishSlice, hardSwish)),
}

// HardSigmoidAttrs are HardSigmoid's attributes: max(0, min(1, alpha·x + beta)).
type HardSigmoidAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.2"`
	Beta  float32 `onnx:"beta" default:"0.5"`
}

// hardSigmoid implements HardSigmoid: max(0, min(1, alpha·x + beta)).
type hardSigmoid struct{ alpha, beta float32 }

func buildHardSigmoid(n *ops.Node, at *HardSigmoidAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return hardSigmoid{alpha: at.Alpha, beta: at.Beta}, nil
}

func (h hardSigmoid) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(floatMap32(c, "HardSigmoid", in[0], expCost, h.k32, h.f64))
}

func (h hardSigmoid) k32(dst, src []float32) {
	a, b := h.alpha, h.beta
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = max(0, min(1, a*v+b))
	}
}

func (h hardSigmoid) f64(v float64) float64 {
	a, b := float64(h.alpha), float64(h.beta)
	return max(0, min(1, a*v+b))
}

// hardSwish is HardSwish, x·HardSigmoid(x) with alpha 1/6, beta 1/2.
func hardSwish(v float64) float64 { return v * max(0, min(1, v/6+0.5)) }

func hardSwishSlice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = v * max(0, min(1, v*(1.0/6)+0.5))
	}
}
