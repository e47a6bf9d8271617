package pool

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "MaxRoiPool", Since: 1, Fold: true}, buildMaxRoiPool)
}

// MaxRoiPoolAttrs are MaxRoiPool's attributes.
type MaxRoiPoolAttrs struct {
	PooledShape  []int64 `onnx:"pooled_shape"`
	SpatialScale float32 `onnx:"spatial_scale" default:"1"`
}

// maxRoiPoolOp is a compiled MaxRoiPool.
type maxRoiPoolOp struct {
	ph, pw int
	scale  float64
}

func buildMaxRoiPool(n *ops.Node, at *MaxRoiPoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if len(at.PooledShape) != 2 || at.PooledShape[0] < 1 || at.PooledShape[1] < 1 || at.PooledShape[0] > maxPoolAttr || at.PooledShape[1] > maxPoolAttr {
		return nil, fmt.Errorf("MaxRoiPool pooled_shape %v must be two positive sizes", at.PooledShape)
	}
	return &maxRoiPoolOp{ph: int(at.PooledShape[0]), pw: int(at.PooledShape[1]), scale: float64(at.SpatialScale)}, nil
}

func (o *maxRoiPoolOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ph, pw, scale := o.ph, o.pw, o.scale
	x, rois := in[0], in[1]
	if x.Rank() != 4 {
		return nil, ops.InputErrorf("MaxRoiPool takes a 4-D input (N, C, H, W), got shape %v", x.Shape)
	}
	if rois.Rank() != 2 || rois.Shape[1] != 5 || rois.DType != x.DType {
		return nil, ops.InputErrorf("MaxRoiPool rois must be [num_rois, 5] of the input's type %v, got %v %v", x.DType, rois.DType, rois.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	R := rois.Shape[0]
	out := []int{R, C, ph, pw}
	rv := rois.Float64s()
	for i := 0; i < R; i++ {
		for _, v := range rv[i*5 : i*5+5] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, ops.InputErrorf("MaxRoiPool roi %d is not finite: %v", i, rv[i*5:i*5+5])
			}
		}
		if b := rv[i*5]; b < 0 || b >= float64(N) {
			return nil, ops.InputErrorf("MaxRoiPool roi %d names batch %v, the input has %d", i, b, N)
		}
	}
	return ops.Result(poolFloats("MaxRoiPool", x, out, func(xs, y []float64) error {
		clampRound := func(v float64) int { // C's round, half away from zero, clamped
			return int(math.Max(-1<<40, math.Min(1<<40, math.Round(v*scale))))
		}
		for i := 0; i < R; i++ {
			roi := rv[i*5 : i*5+5]
			b := int(roi[0])
			x1, y1, x2, y2 := clampRound(roi[1]), clampRound(roi[2]), clampRound(roi[3]), clampRound(roi[4])
			bh := float64(max(y2-y1+1, 1)) / float64(ph)
			bw := float64(max(x2-x1+1, 1)) / float64(pw)
			for ch := 0; ch < C; ch++ {
				plane := xs[(b*C+ch)*H*W : (b*C+ch+1)*H*W]
				yo := y[(i*C+ch)*ph*pw : (i*C+ch+1)*ph*pw]
				for oh := 0; oh < ph; oh++ {
					hs := min(max(int(math.Floor(float64(oh)*bh))+y1, 0), H)
					he := min(max(int(math.Ceil(float64(oh+1)*bh))+y1, 0), H)
					for ow := 0; ow < pw; ow++ {
						ws := min(max(int(math.Floor(float64(ow)*bw))+x1, 0), W)
						we := min(max(int(math.Ceil(float64(ow+1)*bw))+x1, 0), W)
						if err := c.Tick(max(he-hs, 0) * max(we-ws, 0)); err != nil {
							return err
						}
						if he <= hs || we <= ws {
							yo[oh*pw+ow] = 0
							continue
						}
						m := math.Inf(-1)
						for h := hs; h < he; h++ {
							for _, v := range plane[h*W+ws : h*W+we] {
								if v > m {
									m = v
								}
							}
						}
						yo[oh*pw+ow] = m
					}
				}
			}
		}
		return nil
	}))
}
