package norm

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "InstanceNormalization", Since: 6, Fold: true}, buildInstanceNorm)
}

// InstanceNormAttrs are InstanceNormalization's attributes.
type InstanceNormAttrs struct {
	Epsilon float32 `onnx:"epsilon" default:"1e-05"`
}

// instanceNormOp is a compiled InstanceNormalization: GroupNormalization
// with a group per channel.
type instanceNormOp struct{ eps float64 }

func buildInstanceNorm(n *ops.Node, at *InstanceNormAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return &instanceNormOp{eps: float64(at.Epsilon)}, nil
}

func (o *instanceNormOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("InstanceNormalization takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
	}
	N, C, S := x.Shape[0], x.Shape[1], ops.ProdInts(x.Shape[2:])
	scale, err := normParam("InstanceNormalization", "scale", in[1], C)
	if err != nil {
		return nil, err
	}
	bias, err := normParam("InstanceNormalization", "B", in[2], C)
	if err != nil {
		return nil, err
	}
	return ops.Result(normRun("InstanceNormalization", x,
		func(v []float32) ([]float32, error) { return groupNorm(v, N, C, C, S, scale, bias, true, o.eps, c) },
		func(v []float64) ([]float64, error) { return groupNorm(v, N, C, C, S, scale, bias, true, o.eps, c) }))
}
