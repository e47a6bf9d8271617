package norm

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// RMSNormalization is the RMSNormalization operator.
var RMSNormalization = ops.Op{
	ops.Register(ops.Descriptor{Type: "RMSNormalization", Since: 23, Fold: true}, buildRMSNorm),
}

// quantserve.RMSNormalization is the same operator for the normalization
// the "rmsnorm" rewrite finds spelled out in a model of any opset
// (rewritten graphs take no gradients: autodiff compiles the model as
// written).
func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "RMSNormalization", Since: 1, Fold: true}, buildRMSNorm)
}

// RMSNormAttrs are RMSNormalization's attributes.
type RMSNormAttrs struct {
	Axis      int64   `onnx:"axis" default:"-1"`
	Epsilon   float32 `onnx:"epsilon" default:"1e-05"`
	StashType int64   `onnx:"stash_type" default:"1"`
}

// rmsNormOp is a compiled RMSNormalization.
type rmsNormOp struct {
	axis int64
	eps  float32
}

func buildRMSNorm(n *ops.Node, at *RMSNormAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if at.StashType != 1 {
		return nil, ops.Unsupportedf("RMSNormalization stash_type %d (quantserve computes in FLOAT, stash_type 1)", at.StashType)
	}
	return &rmsNormOp{axis: at.Axis, eps: at.Epsilon}, nil
}

func (o *rmsNormOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, scale := in[0], in[1]
	nr, err := newLNRows(x, o.axis)
	if err != nil {
		return nil, err
	}
	// Y has the scale's type, which may differ from X's.
	if xd, ok := x.Data.([]float64); ok && scale.DType == tensor.Float64 {
		sc, err := lnParamOf(nr, scale, scale.Data.([]float64))
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(xd))
		if err := rmsNormRows(xd, out, nr, sc, float64(o.eps), c); err != nil {
			return nil, err
		}
		return []*tensor.Tensor{tensor.From(x.Shape, out)}, nil
	}
	xd, err := ops.Float32s(x, "RMSNormalization")
	if err != nil {
		return nil, err
	}
	sd, err := ops.Float32s(scale, "RMSNormalization")
	if err != nil {
		return nil, err
	}
	sc, err := lnParamOf(nr, scale, sd)
	if err != nil {
		return nil, err
	}
	var out []float32
	if scale.DType == tensor.Float32 {
		out = c.Float32Output(len(xd)) // every row is written
	} else {
		out = make([]float32, len(xd))
	}
	if err := rmsNormRows32(xd, out, nr, sc, o.eps, c); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: scale.DType, Shape: x.Shape, Data: ops.RoundFloat32s(out, scale.DType)}}, nil
}
