package pool

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// RoiAlign gained coordinate_transformation_mode at 16; before it,
	// coordinates behave as its "output_half_pixel".
	ops.Register(ops.Descriptor{Type: "RoiAlign", Since: 10, Until: 15, Fold: true}, buildRoiAlign10)
	ops.Register(ops.Descriptor{Type: "RoiAlign", Since: 16, Fold: true}, buildRoiAlign)
}

// RoiAlignAttrs are RoiAlign's attributes from opset 16.
type RoiAlignAttrs struct {
	CoordinateTransformationMode string  `onnx:"coordinate_transformation_mode" default:"half_pixel"`
	Mode                         string  `onnx:"mode" default:"avg"`
	OutputHeight                 int64   `onnx:"output_height" default:"1"`
	OutputWidth                  int64   `onnx:"output_width" default:"1"`
	SamplingRatio                int64   `onnx:"sampling_ratio"`
	SpatialScale                 float32 `onnx:"spatial_scale" default:"1"`
}

// RoiAlign10Attrs are RoiAlign's attributes in opsets 10 to 15.
type RoiAlign10Attrs struct {
	Mode          string  `onnx:"mode" default:"avg"`
	OutputHeight  int64   `onnx:"output_height" default:"1"`
	OutputWidth   int64   `onnx:"output_width" default:"1"`
	SamplingRatio int64   `onnx:"sampling_ratio"`
	SpatialScale  float32 `onnx:"spatial_scale" default:"1"`
}

// roiAlignMaxSamples bounds the bilinear samples one RoiAlign call takes
// (rois × channels × bins × samples per bin): an adaptive sampling grid
// follows the ROI's size, which the request chooses.
const roiAlignMaxSamples = 1 << 31

// roiAlignOp is a compiled RoiAlign.
type roiAlignOp struct {
	max        bool
	halfPixel  bool
	oh, ow     int
	sampling   int
	scale      float64
	maxSamples int
}

func buildRoiAlign(n *ops.Node, at *RoiAlignAttrs) (ops.Operator, error) {
	var half bool
	switch at.CoordinateTransformationMode {
	case "half_pixel":
		half = true
	case "output_half_pixel":
	default:
		return nil, fmt.Errorf("RoiAlign coordinate_transformation_mode %q is not half_pixel or output_half_pixel", at.CoordinateTransformationMode)
	}
	return roiAlignBuilder(n, at.Mode, at.OutputHeight, at.OutputWidth, at.SamplingRatio, at.SpatialScale, half)
}

func buildRoiAlign10(n *ops.Node, at *RoiAlign10Attrs) (ops.Operator, error) {
	return roiAlignBuilder(n, at.Mode, at.OutputHeight, at.OutputWidth, at.SamplingRatio, at.SpatialScale, false)
}

// roiAlignBuilder builds either version's node from its attributes.
func roiAlignBuilder(n *ops.Node, mode string, oh, ow, sampling int64, scale float32, half bool) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	s := &roiAlignOp{halfPixel: half, scale: float64(scale), maxSamples: roiAlignMaxSamples}
	switch mode {
	case "avg":
	case "max":
		s.max = true
	default:
		return nil, fmt.Errorf("RoiAlign mode %q is not avg or max", mode)
	}
	if oh < 1 || ow < 1 || oh > maxPoolAttr || ow > maxPoolAttr {
		return nil, fmt.Errorf("RoiAlign output_height %d and output_width %d must be positive", oh, ow)
	}
	if sampling < 0 || sampling > maxPoolAttr {
		return nil, fmt.Errorf("RoiAlign sampling_ratio %d must be 0 (adaptive) or positive", sampling)
	}
	s.oh, s.ow, s.sampling = int(oh), int(ow), int(sampling)
	return s, nil
}

func (s *roiAlignOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return ops.Result(s.run(c, in[0], in[1], in[2]))
}

func (s *roiAlignOp) run(oc *ops.Context, x, rois, batch *tensor.Tensor) (*tensor.Tensor, error) {
	if x.Rank() != 4 {
		return nil, ops.InputErrorf("RoiAlign takes a 4-D input (N, C, H, W), got shape %v", x.Shape)
	}
	if rois.Rank() != 2 || rois.Shape[1] != 4 || rois.DType != x.DType {
		return nil, ops.InputErrorf("RoiAlign rois must be [num_rois, 4] of the input's type %v, got %v %v", x.DType, rois.DType, rois.Shape)
	}
	bi, ok := batch.Data.([]int64)
	if !ok || batch.Rank() != 1 || len(bi) != rois.Shape[0] {
		return nil, ops.InputErrorf("RoiAlign batch_indices must be INT64 [num_rois] (%d), got %v %v", rois.Shape[0], batch.DType, batch.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	R := rois.Shape[0]
	if (H == 0 || W == 0) && R*C > 0 {
		return nil, ops.InputErrorf("RoiAlign over an empty feature map (shape %v)", x.Shape)
	}
	rv := rois.Float64s()
	offset := 0.0
	if s.halfPixel {
		offset = 0.5
	}
	type roi struct {
		y0, x0, bh, bw float64
		gh, gw         int
	}
	geo := make([]roi, R)
	samples := 0.0
	for i := range geo {
		c := rv[i*4 : i*4+4]
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, ops.InputErrorf("RoiAlign roi %d is not finite: %v", i, c)
			}
		}
		if bi[i] < 0 || bi[i] >= int64(N) {
			return nil, ops.InputErrorf("RoiAlign batch index %d of roi %d is outside the batch of %d", bi[i], i, N)
		}
		x0, y0 := c[0]*s.scale-offset, c[1]*s.scale-offset
		rw, rh := c[2]*s.scale-offset-x0, c[3]*s.scale-offset-y0
		if !s.halfPixel { // malformed ROIs become 1×1
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		r := roi{y0: y0, x0: x0, bh: rh / float64(s.oh), bw: rw / float64(s.ow), gh: s.sampling, gw: s.sampling}
		if s.sampling == 0 {
			gh, gw := math.Ceil(rh/float64(s.oh)), math.Ceil(rw/float64(s.ow))
			if gh > float64(s.maxSamples) || gw > float64(s.maxSamples) {
				return nil, ops.InputErrorf("RoiAlign roi %d %v needs a sampling grid of %v×%v per bin", i, c, gh, gw)
			}
			r.gh, r.gw = max(int(gh), 0), max(int(gw), 0)
		}
		samples += float64(r.gh) * float64(r.gw) * float64(s.oh*s.ow) * float64(C)
		geo[i] = r
	}
	if samples > float64(s.maxSamples) {
		return nil, ops.InputErrorf("RoiAlign would take %.0f bilinear samples, more than the %d quantserve allows in one call", samples, s.maxSamples)
	}
	out := []int{R, C, s.oh, s.ow}
	return poolFloats("RoiAlign", x, out, func(xs, y []float64) error {
		var w [4]float64
		var pos [4]int
		for i, r := range geo {
			count := float64(max(r.gh*r.gw, 1))
			b := int(bi[i])
			for ph := 0; ph < s.oh; ph++ {
				for pw := 0; pw < s.ow; pw++ {
					if err := oc.Tick(r.gh * r.gw * C); err != nil {
						return err
					}
					first := true
					for iy := 0; iy < r.gh; iy++ {
						yy := r.y0 + float64(ph)*r.bh + (float64(iy)+0.5)*r.bh/float64(r.gh)
						for ix := 0; ix < r.gw; ix++ {
							xx := r.x0 + float64(pw)*r.bw + (float64(ix)+0.5)*r.bw/float64(r.gw)
							roiBilinear(yy, xx, H, W, &pos, &w)
							for c := 0; c < C; c++ {
								plane := xs[(b*C+c)*H*W : (b*C+c+1)*H*W]
								o := ((i*C+c)*s.oh+ph)*s.ow + pw
								if !s.max {
									y[o] += w[0]*plane[pos[0]] + w[1]*plane[pos[1]] + w[2]*plane[pos[2]] + w[3]*plane[pos[3]]
									continue
								}
								v := math.Max(math.Max(w[0]*plane[pos[0]], w[1]*plane[pos[1]]), math.Max(w[2]*plane[pos[2]], w[3]*plane[pos[3]]))
								if first || v > y[o] {
									y[o] = v
								}
							}
							first = false
						}
					}
					if !s.max {
						for c := 0; c < C; c++ {
							y[((i*C+c)*s.oh+ph)*s.ow+pw] /= count
						}
					}
				}
			}
		}
		return nil
	})
}

// roiBilinear sets the four neighbours of (y, x) in an H×W plane and
// their bilinear weights; a point more than one pixel outside the plane
// weighs nothing.
func roiBilinear(y, x float64, H, W int, pos *[4]int, w *[4]float64) {
	if y < -1 || y > float64(H) || x < -1 || x > float64(W) {
		*pos, *w = [4]int{}, [4]float64{}
		return
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= H-1 {
		yl, yh, y = H-1, H-1, float64(H-1)
	}
	if xl >= W-1 {
		xl, xh, x = W-1, W-1, float64(W-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	*pos = [4]int{yl*W + xl, yl*W + xh, yh*W + xl, yh*W + xh}
	*w = [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}
}
