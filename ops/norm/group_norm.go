package norm

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// GroupNormalization scales per group at 18, per channel from 21.
	ops.Register(ops.Descriptor{Type: "GroupNormalization", Since: 18, Until: 20, Fold: true}, buildGroupNorm)
	ops.Register(ops.Descriptor{Type: "GroupNormalization", Since: 21, Fold: true}, buildGroupNorm)
}

// GroupNormAttrs are GroupNormalization's attributes.
type GroupNormAttrs struct {
	Epsilon   float32 `onnx:"epsilon" default:"1e-05"`
	NumGroups *int64  `onnx:"num_groups"`
	StashType int64   `onnx:"stash_type" default:"1"` // opset 21 on
}

// groupNormOp is a compiled GroupNormalization.
type groupNormOp struct {
	groups     int
	eps        float64
	perChannel bool // opset 21: scale and bias per channel, not per group
}

func buildGroupNorm(n *ops.Node, at *GroupNormAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := n.CheckAttrOpsets(ops.OpsetAttr{Name: "stash_type", Since: 21}); err != nil {
		return nil, err
	}
	if at.NumGroups == nil || *at.NumGroups < 1 || *at.NumGroups > tensor.MaxElements {
		return nil, fmt.Errorf("GroupNormalization needs num_groups >= 1")
	}
	switch at.StashType {
	case 1, 10, 11, 16: // float, float16, double, bfloat16: quantserve computes stage one in float64 for all
	default:
		return nil, fmt.Errorf("GroupNormalization stash_type %d is not a floating-point type", at.StashType)
	}
	return &groupNormOp{groups: int(*at.NumGroups), eps: float64(at.Epsilon), perChannel: n.Opset >= 21}, nil
}

func (o *groupNormOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("GroupNormalization takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
	}
	G := o.groups
	N, C, S := x.Shape[0], x.Shape[1], ops.ProdInts(x.Shape[2:])
	if C%G != 0 {
		return nil, ops.InputErrorf("GroupNormalization: %d channels do not split into %d groups", C, G)
	}
	want := G
	if o.perChannel {
		want = C
	}
	scale, err := normParam("GroupNormalization", "scale", in[1], want)
	if err != nil {
		return nil, err
	}
	bias, err := normParam("GroupNormalization", "bias", in[2], want)
	if err != nil {
		return nil, err
	}
	return ops.Result(normRun("GroupNormalization", x,
		func(v []float32) ([]float32, error) {
			return groupNorm(v, N, C, G, S, scale, bias, o.perChannel, o.eps, c)
		},
		func(v []float64) ([]float64, error) {
			return groupNorm(v, N, C, G, S, scale, bias, o.perChannel, o.eps, c)
		}))
}

// groupNorm normalizes each of the G groups of channels of each image of x
// ([N, C, S]) by the group's mean and variance, then scales and shifts by
// scale and bias, given per channel (perChannel) or per group.
func groupNorm[T tensor.Float](x []T, N, C, G, S int, scale, bias []float64, perChannel bool, eps float64, oc *ops.Context) ([]T, error) {
	if G == 0 || len(x) == 0 {
		return make([]T, len(x)), nil
	}
	a, b := make([]float64, N*C), make([]float64, N*C)
	cg := C / G
	for i := 0; i < N; i++ {
		for g := 0; g < G; g++ {
			if err := oc.Tick(cg * S); err != nil {
				return nil, err
			}
			off := (i*C + g*cg) * S
			mean, variance := meanVar(x[off : off+cg*S])
			inv := 1 / math.Sqrt(variance+eps)
			for c := g * cg; c < (g+1)*cg; c++ {
				k := g
				if perChannel {
					k = c
				}
				a[i*C+c] = scale[k] * inv
				b[i*C+c] = bias[k] - mean*scale[k]*inv
			}
		}
	}
	return affinePlanes(x, a, b, S, oc)
}
