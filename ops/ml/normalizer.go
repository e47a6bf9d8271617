package ml

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "Normalizer", Since: 1, Fold: true}, buildNormalizer)
}

// NormalizerAttrs are Normalizer's attributes.
type NormalizerAttrs struct {
	Norm string `onnx:"norm" default:"MAX"`
}

// normalizer is a compiled Normalizer: its norm, MAX, L1 or L2.
type normalizer struct{ norm string }

func buildNormalizer(n *ops.Node, a *NormalizerAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	switch a.Norm {
	case "MAX", "L1", "L2":
	default:
		return nil, fmt.Errorf("norm %q is not one of MAX, L1, L2", a.Norm)
	}
	return normalizer{norm: a.Norm}, nil
}

func (o normalizer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vs, rows, f, err := readRows("Normalizer", in[0], numeric...)
	if err != nil {
		return nil, err
	}
	y := make([]float32, len(vs))
	for r := range rows {
		row := vs[r*f : (r+1)*f]
		// MAX divides by the row's maximum. L1 and L2 divide by the
		// row's largest magnitude first, so that their sums neither
		// overflow nor underflow.
		m := math.Inf(-1)
		if o.norm != "MAX" {
			m = 0
		}
		for _, v := range row {
			if o.norm == "MAX" {
				m = max(m, v)
			} else {
				m = max(m, math.Abs(v))
			}
		}
		d := 1.0
		switch o.norm {
		case "L1":
			d = 0
			for _, v := range row {
				d += math.Abs(v / m)
			}
		case "L2":
			d = 0
			for _, v := range row {
				d += (v / m) * (v / m)
			}
			d = math.Sqrt(d)
		}
		for i, v := range row {
			if m == 0 || d == 0 {
				y[r*f+i] = float32(v) // a zero divisor leaves the row as it is
			} else {
				y[r*f+i] = float32(v / m / d)
			}
		}
	}
	return []*tensor.Tensor{tensor.From(slices.Clone(in[0].Shape), y)}, nil
}
