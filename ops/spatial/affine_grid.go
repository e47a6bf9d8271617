package spatial

import (
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "AffineGrid", Since: 20, Fold: true}, buildAffineGrid)
}

// AffineGridAttrs are AffineGrid's attributes.
type AffineGridAttrs struct {
	AlignCorners bool `onnx:"align_corners"`
}

// affineGrid is a compiled AffineGrid: whether -1 and 1 are the centres of
// the corner pixels (rather than their outer edges).
type affineGrid struct{ align bool }

func buildAffineGrid(n *ops.Node, at *AffineGridAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return &affineGrid{align: at.AlignCorners}, nil
}

func (op *affineGrid) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	align := op.align
	theta := in[0]
	size, err := in[1].Int64s()
	if err != nil || in[1].Rank() != 1 || (len(size) != 4 && len(size) != 5) {
		return nil, ops.InputErrorf("AffineGrid size must be a 1-D integer tensor of 4 or 5 elements, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	if !theta.DType.IsFloat() {
		return nil, ops.InputErrorf("AffineGrid theta must be floating point, got %v", theta.DType)
	}
	r := len(size) - 2
	if theta.Rank() != 3 || theta.Shape[1] != r || theta.Shape[2] != r+1 || int64(theta.Shape[0]) != size[0] {
		return nil, ops.InputErrorf("AffineGrid theta %s does not fit size %v: want (%d, %d, %d)", tensor.ShapeString(theta.Shape), size, size[0], r, r+1)
	}
	out := []int{theta.Shape[0]}
	for _, d := range size[2:] {
		if d < 1 || d > tensor.MaxElements {
			return nil, ops.InputErrorf("AffineGrid size %v has an invalid spatial dimension", size)
		}
		out = append(out, int(d))
	}
	out = append(out, r)
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	if err := c.Reserve(int64(total) * 16); err != nil { // the grid in float64, and its cast
		return nil, err
	}
	th := theta.Float64s()
	res := make([]float64, total)
	spatial := out[1 : r+1]
	// base coordinates per spatial dimension, in [-1, 1]
	base := make([][]float64, r)
	for d, l := range spatial {
		base[d] = make([]float64, l)
		for i := range base[d] {
			switch {
			case !align:
				base[d][i] = -1 + float64(2*i+1)/float64(l)
			case l > 1:
				base[d][i] = -1 + 2*float64(i)/float64(l-1)
			default:
				base[d][i] = -1
			}
		}
	}
	pts := total / max(out[0]*r, 1)
	h := make([]float64, r+1) // homogeneous point, innermost dimension first
	h[r] = 1
	for b := 0; b < out[0]; b++ {
		t := th[b*r*(r+1) : (b+1)*r*(r+1)]
		it := tensor.NewIter(spatial)
		for p := 0; it.Next(); p++ {
			if err := c.Tick(r * (r + 1)); err != nil {
				return nil, err
			}
			idx := it.Index()
			for d := 0; d < r; d++ {
				h[d] = base[r-1-d][idx[r-1-d]]
			}
			o := res[(b*pts+p)*r:]
			for i := 0; i < r; i++ {
				var s float64
				for j := 0; j <= r; j++ {
					s += t[i*(r+1)+j] * h[j]
				}
				o[i] = s
			}
		}
	}
	y, err := tensorops.CastToContext(c, &tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, theta.DType)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
