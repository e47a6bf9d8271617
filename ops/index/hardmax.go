package index

import (
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// Hardmax: 1 at the first largest entry along axis (before opset 13: of
// the input coerced to 2-D at axis), 0 elsewhere.
func init() {
	ops.Register(ops.Descriptor{Type: "Hardmax", Since: 1, Until: 12, Fold: true}, func(n *ops.Node, at *HardmaxLegacyAttrs) (ops.Operator, error) {
		return buildHardmax(n, at.Axis, true)
	})
	ops.Register(ops.Descriptor{Type: "Hardmax", Since: 13, Fold: true}, func(n *ops.Node, at *HardmaxAttrs) (ops.Operator, error) {
		return buildHardmax(n, at.Axis, false)
	})
}

// HardmaxAttrs are Hardmax's attributes from opset 13: along axis alone.
type HardmaxAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
}

// HardmaxLegacyAttrs are Hardmax's attributes before opset 13: the input
// is coerced to 2-D at axis.
type HardmaxLegacyAttrs struct {
	Axis int64 `onnx:"axis" default:"1"`
}

// hardmax is a compiled Hardmax: its axis and whether the input is
// coerced to 2-D there (before opset 13).
type hardmax struct {
	axis   int64
	legacy bool
}

func buildHardmax(n *ops.Node, axis int64, legacy bool) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return hardmax{axis: axis, legacy: legacy}, nil
}

func (h hardmax) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("Hardmax does not take %v", x.DType)
	}
	if x.Rank() == 0 {
		return nil, ops.InputErrorf("Hardmax needs rank >= 1")
	}
	a, err := ops.NormAxis(h.axis, x.Rank())
	if err != nil {
		return nil, err
	}
	out := make([]float64, x.Len())
	if len(out) > 0 {
		v := x.Float64s()
		outer, dim, inner := geometry(x.Shape, a)
		if h.legacy {
			dim, inner = dim*inner, 1
		}
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				base := o*dim*inner + j
				best := base
				for lo := 0; lo < dim; lo += ops.TickEvery {
					hi := min(lo+ops.TickEvery, dim)
					if err := c.Tick(hi - lo); err != nil {
						return nil, err
					}
					for i := max(lo, 1); i < hi; i++ {
						if v[base+i*inner] > v[best] {
							best = base + i*inner
						}
					}
				}
				out[best] = 1
			}
		}
	}
	y, err := tensorops.CastToContext(c, tensor.From(slices.Clone(x.Shape), out), x.DType)
	if err != nil {
		return nil, err
	}
	return out1(y), nil
}
