package ml

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "Scaler", Since: 1, Fold: true}, buildScaler)
}

// ScalerAttrs are Scaler's attributes.
type ScalerAttrs struct {
	Offset []float32 `onnx:"offset"`
	Scale  []float32 `onnx:"scale"`
}

// scaler is a compiled Scaler: (x − offset)·scale, each one value or
// one per feature.
type scaler struct{ offset, scale []float32 }

func buildScaler(n *ops.Node, a *ScalerAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	return &scaler{offset: a.Offset, scale: a.Scale}, nil
}

func (s *scaler) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !slices.Contains(numeric, x.DType) {
		return nil, ops.InputErrorf("Scaler does not take %v input", x.DType)
	}
	f := 1
	if x.Rank() > 0 {
		f = x.Shape[x.Rank()-1]
	}
	for _, p := range [][]float32{s.offset, s.scale} {
		if len(p) > 1 && len(p) != f {
			return nil, ops.InputErrorf("Scaler has %d offsets or scales, the input has %d features", len(p), f)
		}
	}
	at := func(p []float32, i int, def float32) float32 {
		switch len(p) {
		case 0:
			return def
		case 1:
			return p[0]
		}
		return p[i%f]
	}
	vs := x.Float64s()
	y := make([]float32, len(vs))
	for i, v := range vs {
		y[i] = float32((v - float64(at(s.offset, i, 0))) * float64(at(s.scale, i, 1)))
	}
	return []*tensor.Tensor{tensor.From(slices.Clone(x.Shape), y)}, nil
}
