package norm

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// LayerNormalization is the LayerNormalization operator.
var LayerNormalization = ops.Op{
	ops.Register(ops.Descriptor{Type: "LayerNormalization", Since: 17, Fold: true}, buildLayerNorm),
}

// quantserve.LayerNormalization is the same operator for the
// normalization the "layernorm" rewrite finds spelled out in a model of
// any opset (rewritten graphs take no gradients: autodiff compiles the
// model as written).
func init() {
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "LayerNormalization", Since: 1, Fold: true}, buildLayerNorm)
}

// LayerNormAttrs are LayerNormalization's attributes.
type LayerNormAttrs struct {
	Axis      int64   `onnx:"axis" default:"-1"`
	Epsilon   float32 `onnx:"epsilon" default:"1e-05"`
	StashType int64   `onnx:"stash_type" default:"1"`
}

// layerNormOp is a compiled LayerNormalization.
type layerNormOp struct {
	axis int64
	eps  float32
}

func buildLayerNorm(n *ops.Node, at *LayerNormAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 3, 1, 3); err != nil {
		return nil, err
	}
	if at.StashType != 1 {
		return nil, ops.Unsupportedf("LayerNormalization stash_type %d (quantserve computes in FLOAT, stash_type 1)", at.StashType)
	}
	return &layerNormOp{axis: at.Axis, eps: at.Epsilon}, nil
}

func (o *layerNormOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, scale := in[0], in[1]
	bias := ops.Optional(in, 2)
	if err := ops.SameType("LayerNormalization", x, scale, bias); err != nil {
		return nil, err
	}
	nr, err := newLNRows(x, o.axis)
	if err != nil {
		return nil, err
	}
	mean := make([]float32, nr.outer)
	inv := make([]float32, nr.outer)
	var y any
	if xd, ok := x.Data.([]float64); ok {
		sc, err := lnParamOf(nr, scale, scale.Data.([]float64))
		if err != nil {
			return nil, err
		}
		var b lnParam[float64]
		if bias != nil {
			if b, err = lnParamOf(nr, bias, bias.Data.([]float64)); err != nil {
				return nil, err
			}
		}
		out := make([]float64, len(xd))
		if err := layerNormRows(xd, out, nr, sc, b, float64(o.eps), mean, inv, c); err != nil {
			return nil, err
		}
		y = out
	} else {
		xd, err := ops.Float32s(x, "LayerNormalization")
		if err != nil {
			return nil, err
		}
		sc, err := lnParamOf(nr, scale, mustFloat32s(scale))
		if err != nil {
			return nil, err
		}
		var b lnParam[float32]
		if bias != nil {
			if b, err = lnParamOf(nr, bias, mustFloat32s(bias)); err != nil {
				return nil, err
			}
		}
		var out []float32
		if x.DType == tensor.Float32 {
			out = c.Float32Output(len(xd)) // every row is written
		} else {
			out = make([]float32, len(xd))
		}
		if err := layerNormRows32(xd, out, nr, sc, b, o.eps, mean, inv, c); err != nil {
			return nil, err
		}
		y = ops.RoundFloat32s(out, x.DType)
	}
	return []*tensor.Tensor{
		{DType: x.DType, Shape: x.Shape, Data: y},
		tensor.From(nr.statShape, mean),
		tensor.From(nr.statShape, inv),
	}, nil
}
