package model

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	register(Descriptor{Type: "Upsample", Since: 7, Until: 8, Fold: true}, buildUpsample7)
	register(Descriptor{Type: "Upsample", Since: 9, Until: 9, Fold: true}, buildResize10)
	register(Descriptor{Type: "Resize", Since: 10, Until: 10, Fold: true}, buildResize10)
	register(Descriptor{Type: "Resize", Since: 11, Until: 17, Fold: true}, buildResize11)
	register(Descriptor{Type: "Resize", Since: 18, Fold: true}, buildResize18)
}

// UpsampleAttrs are Upsample's attributes at opsets 7–8 (scales are an
// attribute).
type UpsampleAttrs struct {
	Mode   string    `onnx:"mode" default:"nearest"`
	Scales []float32 `onnx:"scales"`
}

// ResizeModeAttrs are the attributes of Upsample at opset 9 and Resize at
// opset 10: scales are an input, coordinates are asymmetric.
type ResizeModeAttrs struct {
	Mode string `onnx:"mode" default:"nearest"`
}

// ResizeAttrs are Resize's attributes at opsets 11–17.
type ResizeAttrs struct {
	CoordinateTransformationMode string  `onnx:"coordinate_transformation_mode" default:"half_pixel"`
	CubicCoeffA                  float32 `onnx:"cubic_coeff_a" default:"-0.75"`
	ExcludeOutside               bool    `onnx:"exclude_outside"`
	ExtrapolationValue           float32 `onnx:"extrapolation_value"`
	Mode                         string  `onnx:"mode" default:"nearest"`
	NearestMode                  string  `onnx:"nearest_mode" default:"round_prefer_floor"`
}

// Resize18Attrs are Resize's attributes from opset 18 on.
type Resize18Attrs struct {
	Antialias                    bool    `onnx:"antialias"`
	Axes                         []int64 `onnx:"axes"` // nil: every axis
	CoordinateTransformationMode string  `onnx:"coordinate_transformation_mode" default:"half_pixel"`
	CubicCoeffA                  float32 `onnx:"cubic_coeff_a" default:"-0.75"`
	ExcludeOutside               bool    `onnx:"exclude_outside"`
	ExtrapolationValue           float32 `onnx:"extrapolation_value"`
	KeepAspectRatioPolicy        string  `onnx:"keep_aspect_ratio_policy" default:"stretch"`
	Mode                         string  `onnx:"mode" default:"nearest"`
	NearestMode                  string  `onnx:"nearest_mode" default:"round_prefer_floor"`
}

const (
	resizeNearest = iota
	resizeLinear
	resizeCubic
)

// resizeConfig is every form of Resize and Upsample reduced to one.
type resizeConfig struct {
	op         string
	mode       int
	ctm        string // coordinate_transformation_mode
	nearest    string // nearest_mode; "" is opset 10's rule
	cubicA     float64
	exclude    bool
	extrap     float64
	antialias  bool
	axes       []int64
	policy     string
	scalesAttr []float32 // Upsample 7
	atLeast1   bool      // Upsample: scales are >= 1
	roiIn      int       // input positions; -1 when the opset has none
	scalesIn   int
	sizesIn    int
	required   int // inputs the opset requires
}

func resizeConfigOf(op string, params any, opset int64) (*resizeConfig, error) {
	c := &resizeConfig{op: op, ctm: "asymmetric", cubicA: -0.75, policy: "stretch", roiIn: -1, scalesIn: -1, sizesIn: -1}
	var mode string
	switch at := params.(type) {
	case *UpsampleAttrs:
		mode, c.scalesAttr, c.atLeast1, c.required = at.Mode, at.Scales, true, 1
		if at.Scales == nil {
			return nil, fmt.Errorf("Upsample needs the scales attribute")
		}
	case *ResizeModeAttrs:
		mode, c.scalesIn, c.atLeast1, c.required = at.Mode, 1, op == "Upsample", 2
	case *ResizeAttrs:
		mode, c.ctm, c.nearest = at.Mode, at.CoordinateTransformationMode, at.NearestMode
		c.cubicA, c.exclude, c.extrap = float64(at.CubicCoeffA), at.ExcludeOutside, float64(at.ExtrapolationValue)
		c.roiIn, c.scalesIn, c.sizesIn, c.required = 1, 2, 3, 1
		if opset < 13 {
			c.required = 3
		}
	case *Resize18Attrs:
		mode, c.ctm, c.nearest = at.Mode, at.CoordinateTransformationMode, at.NearestMode
		c.cubicA, c.exclude, c.extrap = float64(at.CubicCoeffA), at.ExcludeOutside, float64(at.ExtrapolationValue)
		c.antialias, c.axes, c.policy = at.Antialias, at.Axes, at.KeepAspectRatioPolicy
		c.roiIn, c.scalesIn, c.sizesIn, c.required = 1, 2, 3, 1
	default:
		return nil, fmt.Errorf("model: %s with attributes %T", op, params)
	}
	switch mode {
	case "nearest":
		c.mode = resizeNearest
	case "linear":
		c.mode = resizeLinear
	case "cubic":
		if opset < 11 {
			return nil, unsupportedf("%s mode %q at opset %d", op, mode, opset)
		}
		c.mode = resizeCubic
	default:
		return nil, unsupportedf("%s mode %q", op, mode)
	}
	switch c.ctm {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize":
	case "tf_half_pixel_for_nn":
		if opset >= 13 {
			return nil, unsupportedf("Resize coordinate_transformation_mode %q at opset %d (removed in 13)", c.ctm, opset)
		}
	case "half_pixel_symmetric":
		if opset < 19 {
			return nil, unsupportedf("Resize coordinate_transformation_mode %q at opset %d (added in 19)", c.ctm, opset)
		}
	default:
		return nil, unsupportedf("Resize coordinate_transformation_mode %q", c.ctm)
	}
	switch c.nearest {
	case "", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, unsupportedf("Resize nearest_mode %q", c.nearest)
	}
	switch c.policy {
	case "stretch", "not_larger", "not_smaller":
	default:
		return nil, unsupportedf("Resize keep_aspect_ratio_policy %q", c.policy)
	}
	if c.exclude && c.mode != resizeCubic {
		c.exclude = false // only cubic has weights outside the input
	}
	return c, nil
}

// ResizeAxis is Resize's resampling along one axis: output index o is
// Σ_k Weight[o·Taps+k] · input[Index[o·Taps+k]] along the axis (Weight is
// nil for nearest: one tap of weight 1). Outside, when not nil, marks
// output indices beyond the input (tf_crop_and_resize), where the output
// holds the extrapolation value instead.
type ResizeAxis struct {
	Axis, In, Out, Taps int
	Index               []int
	Weight              []float64
	Outside             []bool
}

// ResizePlan is how a Resize (or Upsample) node resamples its input: the
// output shape, and the axes whose sampling is not the identity, each
// resampled independently of the others.
type ResizePlan struct {
	Shape         []int
	Axes          []ResizeAxis
	Nearest       bool
	Extrapolation float64
}

// ResizePlanOf resolves a compiled Resize or Upsample node (st) on its
// inputs. The gradient of Resize applies the transposed plan to dY.
func ResizePlanOf(st Step, in []*tensor.Tensor) (*ResizePlan, error) {
	c, err := resizeConfigOf(st.Op, st.Params, st.Opset)
	if err != nil {
		return nil, err
	}
	return c.plan(in)
}

// resizeFloats reads a float tensor input (scales, roi) as float64.
func resizeFloats(t *tensor.Tensor, name string) ([]float64, error) {
	if !t.DType.IsFloat() || t.Rank() > 1 {
		return nil, inputErrorf("Resize %s must be a 1-D floating-point tensor, got %v%s", name, t.DType, tensor.ShapeString(t.Shape))
	}
	return t.Float64s(), nil
}

func (c *resizeConfig) input(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < 0 || i >= len(in) || in[i] == nil || in[i].Len() == 0 {
		return nil
	}
	return in[i]
}

// plan computes the output shape and per-axis sampling for input in[0].
func (c *resizeConfig) plan(in []*tensor.Tensor) (*ResizePlan, error) {
	x := in[0]
	r := x.Rank()
	axes := make([]int, 0, r)
	if c.axes == nil {
		for i := range r {
			axes = append(axes, i)
		}
	} else {
		seen := make([]bool, r)
		for _, a := range c.axes {
			d, err := normAxis(a, r)
			if err != nil {
				return nil, err
			}
			if seen[d] {
				return nil, inputErrorf("Resize axes %v repeat axis %d", c.axes, d)
			}
			seen[d] = true
			axes = append(axes, d)
		}
	}
	scale := make([]float64, r)
	out := slices.Clone(x.Shape)
	roiLo, roiHi := make([]float64, r), make([]float64, r)
	for i := range scale {
		scale[i], roiHi[i] = 1, 1
	}
	if roi := c.input(in, c.roiIn); roi != nil && c.ctm == "tf_crop_and_resize" {
		v, err := resizeFloats(roi, "roi")
		if err != nil {
			return nil, err
		}
		if len(v) != 2*len(axes) {
			return nil, inputErrorf("Resize roi has %d values for %d axes, needs %d", len(v), len(axes), 2*len(axes))
		}
		for i, d := range axes {
			roiLo[d], roiHi[d] = v[i], v[i+len(axes)]
		}
	}
	var scales []float64
	switch {
	case c.scalesAttr != nil:
		for _, s := range c.scalesAttr {
			scales = append(scales, float64(s))
		}
	case c.input(in, c.scalesIn) != nil:
		var err error
		if scales, err = resizeFloats(in[c.scalesIn], "scales"); err != nil {
			return nil, err
		}
		if c.input(in, c.sizesIn) != nil {
			return nil, inputErrorf("Resize takes scales or sizes, not both")
		}
	}
	if scales != nil {
		if len(scales) != len(axes) {
			return nil, inputErrorf("%s has %d scales for %d axes", c.op, len(scales), len(axes))
		}
		for i, d := range axes {
			s := scales[i]
			if !(s > 0) || math.IsInf(s, 0) || c.atLeast1 && s < 1 {
				return nil, inputErrorf("%s scale %v is invalid", c.op, s)
			}
			o := math.Floor(s * float64(x.Shape[d]))
			if o > tensor.MaxElements {
				return nil, inputErrorf("%s output dimension %v is too large", c.op, o)
			}
			scale[d], out[d] = s, int(o)
		}
	} else {
		sz := c.input(in, c.sizesIn)
		if sz == nil {
			return nil, inputErrorf("Resize needs scales or sizes")
		}
		sizes, err := sz.Int64s()
		if err != nil || sz.Rank() != 1 || len(sizes) != len(axes) {
			return nil, inputErrorf("Resize sizes must be a 1-D integer tensor of %d values, got %v%s", len(axes), sz.DType, tensor.ShapeString(sz.Shape))
		}
		for i, d := range axes {
			if sizes[i] < 0 || sizes[i] > tensor.MaxElements {
				return nil, inputErrorf("Resize size %d is invalid", sizes[i])
			}
			if x.Shape[d] == 0 {
				if sizes[i] != 0 {
					return nil, inputErrorf("Resize cannot make %d elements of an empty axis", sizes[i])
				}
				continue
			}
			out[d], scale[d] = int(sizes[i]), float64(sizes[i])/float64(x.Shape[d])
		}
		if c.policy != "stretch" {
			pick := math.Inf(1)
			if c.policy == "not_smaller" {
				pick = math.Inf(-1)
			}
			for _, d := range axes {
				if x.Shape[d] == 0 {
					continue
				}
				if c.policy == "not_larger" {
					pick = math.Min(pick, scale[d])
				} else {
					pick = math.Max(pick, scale[d])
				}
			}
			for _, d := range axes {
				if x.Shape[d] == 0 {
					continue
				}
				o := math.Floor(pick*float64(x.Shape[d]) + 0.5)
				if o > tensor.MaxElements {
					return nil, inputErrorf("Resize output dimension %v is too large", o)
				}
				scale[d], out[d] = pick, int(o)
			}
		}
	}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	p := &ResizePlan{Shape: out, Nearest: c.mode == resizeNearest, Extrapolation: c.extrap}
	if total == 0 {
		return p, nil
	}
	for d := range r {
		ax, err := c.axis(d, x.Shape[d], out[d], scale[d], roiLo[d], roiHi[d])
		if err != nil {
			return nil, err
		}
		if !ax.identity() {
			p.Axes = append(p.Axes, ax)
		}
	}
	return p, nil
}

// original maps output index o to a position in the input.
func (c *resizeConfig) original(o, in, out int, scale, roiLo, roiHi float64) float64 {
	x := float64(o)
	switch c.ctm {
	case "half_pixel":
		return (x+0.5)/scale - 0.5
	case "half_pixel_symmetric":
		width := scale * float64(in)
		adjust := float64(out) / width
		center := float64(in) / 2
		return center*(1-adjust) + (x+0.5)/scale - 0.5
	case "pytorch_half_pixel":
		if out > 1 {
			return (x+0.5)/scale - 0.5
		}
		return 0
	case "align_corners":
		if out > 1 {
			return x * float64(in-1) / float64(out-1)
		}
		return 0
	case "tf_half_pixel_for_nn":
		return (x + 0.5) / scale
	case "tf_crop_and_resize":
		if out > 1 {
			return roiLo*float64(in-1) + x*(roiHi-roiLo)*float64(in-1)/float64(out-1)
		}
		return 0.5 * (roiLo + roiHi) * float64(in-1)
	}
	return x / scale // asymmetric
}

// axis computes the taps of axis d.
func (c *resizeConfig) axis(d, in, out int, scale, roiLo, roiHi float64) (ResizeAxis, error) {
	ax := ResizeAxis{Axis: d, In: in, Out: out}
	clampIdx := func(i int) int { return min(max(i, 0), in-1) }
	if c.ctm == "tf_crop_and_resize" {
		ax.Outside = make([]bool, out)
	}
	s := 1.0 // the filter's stretch: below 1 only when antialiasing a downscale
	if c.antialias && c.mode != resizeNearest {
		s = min(scale, 1)
	}
	switch c.mode {
	case resizeNearest:
		ax.Taps = 1
	case resizeLinear:
		ax.Taps = 2
		if s < 1 {
			start := math.Floor(-1/s) + 1
			ax.Taps = int(2 - 2*start)
		}
	case resizeCubic:
		ax.Taps = 4
		if s < 1 {
			start := math.Floor(-2/s) + 1
			ax.Taps = int(2 - 2*start)
		}
	}
	if ax.Taps < 1 || ax.Taps > 2*in+8 || out > tensor.MaxElements/ax.Taps {
		return ax, inputErrorf("%s: scale %v needs too many taps along axis %d", c.op, scale, d)
	}
	ax.Index = make([]int, out*ax.Taps)
	if c.mode != resizeNearest {
		ax.Weight = make([]float64, out*ax.Taps)
	}
	var cub [4]float64
	for o := 0; o < out; o++ {
		xo := c.original(o, in, out, scale, roiLo, roiHi)
		if ax.Outside != nil && (xo < 0 || xo > float64(in-1)) {
			ax.Outside[o] = true
		}
		idx := ax.Index[o*ax.Taps : (o+1)*ax.Taps]
		if c.mode == resizeNearest {
			var i float64
			f := math.Floor(xo)
			switch c.nearest {
			case "":
				if scale < 1 {
					i = math.Ceil(xo)
				} else {
					i = math.Trunc(xo)
				}
			case "floor":
				i = f
			case "ceil":
				i = math.Ceil(xo)
			case "round_prefer_ceil":
				if xo-f < 0.5 {
					i = f
				} else {
					i = f + 1
				}
			default: // round_prefer_floor
				if xo-f <= 0.5 {
					i = f
				} else {
					i = f + 1
				}
			}
			idx[0] = clampIdx(int(math.Max(math.Min(i, float64(in)), -1)))
			continue
		}
		// The taps sit at i0+k for k from start, with i0 the last input
		// position before xo (xo itself when it is a position past 0) and
		// ratio = xo - i0 in (0, 1].
		i0f := math.Ceil(xo) - 1
		ratio := xo - i0f
		i0 := int(math.Max(math.Min(i0f, float64(in)+1), -2))
		w := ax.Weight[o*ax.Taps : (o+1)*ax.Taps]
		start := 1 - ax.Taps/2
		switch {
		case c.mode == resizeLinear && s >= 1:
			w[0], w[1] = 1-ratio, ratio
		case c.mode == resizeLinear:
			var sum float64
			for k := range w {
				v := 1 - math.Abs((float64(start+k)-ratio)*s)
				w[k] = math.Max(v, 0)
				sum += w[k]
			}
			for k := range w {
				w[k] /= sum
			}
		case s >= 1: // cubic
			resizeCubicCoeffs(ratio, c.cubicA, &cub)
			copy(w, cub[:])
		default: // cubic, antialiased
			var sum float64
			for k := range w {
				w[k] = resizeCubicKernel(math.Abs(s*(float64(start+k)-ratio)), c.cubicA)
				sum += w[k]
			}
			for k := range w {
				w[k] /= sum
			}
		}
		for k := range idx {
			idx[k] = i0 + start + k
		}
		if c.exclude {
			var sum float64
			for k, i := range idx {
				if i < 0 || i >= in {
					w[k] = 0
				}
				sum += w[k]
			}
			if sum != 0 {
				for k := range w {
					w[k] /= sum
				}
			}
		}
		for k, i := range idx {
			idx[k] = clampIdx(i)
		}
	}
	return ax, nil
}

// identity reports whether the axis samples every input index once, in
// place.
func (ax *ResizeAxis) identity() bool {
	if ax.In != ax.Out {
		return false
	}
	for o := 0; o < ax.Out; o++ {
		if ax.Outside != nil && ax.Outside[o] {
			return false
		}
		for k := 0; k < ax.Taps; k++ {
			i := o*ax.Taps + k
			w := 1.0
			if ax.Weight != nil {
				w = ax.Weight[i]
			}
			switch {
			case ax.Index[i] == o:
				// weights on o are summed below
			case w != 0:
				return false
			}
		}
		var sum float64
		for k := 0; k < ax.Taps; k++ {
			i := o*ax.Taps + k
			if ax.Index[i] == o {
				if ax.Weight == nil {
					sum = 1
				} else {
					sum += ax.Weight[i]
				}
			}
		}
		if sum != 1 {
			return false
		}
	}
	return true
}

// resizeCubicCoeffs are the cubic convolution weights (coefficient a) of
// the four points at ratio-1, ratio, ratio+1 and ratio+2 before a sample
// that lies ratio past the second.
func resizeCubicCoeffs(ratio, a float64, c *[4]float64) {
	x := ratio + 1
	c[0] = ((a*x-5*a)*x+8*a)*x - 4*a
	c[1] = ((a+2)*ratio-(a+3))*ratio*ratio + 1
	x = 1 - ratio
	c[2] = ((a+2)*x-(a+3))*x*x + 1
	x = 2 - ratio
	c[3] = ((a*x-5*a)*x+8*a)*x - 4*a
}

// resizeCubicKernel is the cubic convolution kernel at distance x >= 0.
func resizeCubicKernel(x, a float64) float64 {
	switch {
	case x <= 1:
		return ((a+2)*x-(a+3))*x*x + 1
	case x < 2:
		return ((a*x-5*a)*x+8*a)*x - 4*a
	}
	return 0
}

// ---- builders ----

func buildUpsample7(n *node, at *UpsampleAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	c, err := resizeConfigOf("Upsample", at, n.opset)
	if err != nil {
		return nil, err
	}
	for _, s := range at.Scales {
		if !(s >= 1) {
			return nil, fmt.Errorf("Upsample scale %v is below 1", s)
		}
	}
	return c.run, nil
}

func buildResize10(n *node, at *ResizeModeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	c, err := resizeConfigOf(n.pb.OpType, at, n.opset)
	if err != nil {
		return nil, err
	}
	return c.run, nil
}

func buildResize11(n *node, at *ResizeAttrs) (opFunc, error) {
	c, err := resizeConfigOf("Resize", at, n.opset)
	if err != nil {
		return nil, err
	}
	if err := n.checkArity(c.required, 4, 1, 1); err != nil {
		return nil, err
	}
	return c.run, nil
}

func buildResize18(n *node, at *Resize18Attrs) (opFunc, error) {
	c, err := resizeConfigOf("Resize", at, n.opset)
	if err != nil {
		return nil, err
	}
	if err := n.checkArity(1, 4, 1, 1); err != nil {
		return nil, err
	}
	return c.run, nil
}

// run is the compiled op.
func (c *resizeConfig) run(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) < c.required || in[0] == nil {
		return nil, inputErrorf("%s needs %d inputs", c.op, c.required)
	}
	x := in[0]
	p, err := c.plan(in)
	if err != nil {
		return nil, err
	}
	y, err := resizeApply(x, p)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// resizeApply resamples x by plan p.
func resizeApply(x *tensor.Tensor, p *ResizePlan) (*tensor.Tensor, error) {
	total, _ := tensor.NumElements(p.Shape)
	if total == 0 {
		t, err := tensor.New(x.DType, p.Shape)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		return t, nil
	}
	if p.Nearest {
		src := make([][]int, x.Rank())
		for d := range src {
			src[d] = make([]int, p.Shape[d])
			for i := range src[d] {
				src[d][i] = i
			}
		}
		extrap := false
		for _, ax := range p.Axes {
			s := slices.Clone(ax.Index)
			for o := range s {
				if ax.Outside != nil && ax.Outside[o] {
					s[o], extrap = -1, true
				}
			}
			src[ax.Axis] = s
		}
		var fill *tensor.Tensor
		if extrap {
			var err error
			if fill, err = geomScalarAs(tensor.Scalar(p.Extrapolation), x.DType); err != nil {
				return nil, err
			}
		}
		return geomGather(x, p.Shape, src, fill)
	}
	shape := slices.Clone(p.Shape)
	if len(p.Axes) == 0 {
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: x.Data}, nil
	}
	switch d := x.Data.(type) {
	case []float32:
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: resizeFloat(d, x.Shape, p)}, nil
	case []float64:
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: resizeFloat(d, x.Shape, p)}, nil
	case []tensor.F16:
		r := resizeFloat(tensor.HalfToFloat32(d), x.Shape, p)
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: tensor.Float32ToHalf[tensor.F16](r)}, nil
	case []tensor.BF16:
		r := resizeFloat(tensor.HalfToFloat32(d), x.Shape, p)
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: tensor.Float32ToHalf[tensor.BF16](r)}, nil
	case []string, []bool:
		return nil, inputErrorf("Resize interpolates numbers only, got %v", x.DType)
	}
	r := resizeFloat(x.Float64s(), x.Shape, p)
	lo, hi := resizeIntRange(x.DType)
	for i, v := range r {
		r[i] = math.Max(math.Min(v, hi), lo)
	}
	return castTo(&tensor.Tensor{DType: tensor.Float64, Shape: shape, Data: r}, x.DType)
}

// resizeIntRange is the range of an integer type, for saturating
// interpolated values.
func resizeIntRange(dt tensor.DataType) (float64, float64) {
	switch dt {
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8
	case tensor.Uint8:
		return 0, math.MaxUint8
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16
	case tensor.Uint16:
		return 0, math.MaxUint16
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32
	case tensor.Uint32:
		return 0, math.MaxUint32
	case tensor.Uint64:
		return 0, 18446744073709549568 // the largest float64 below 2^64
	}
	return -9223372036854775808, 9223372036854774784 // int64
}

// resizeFloat interpolates x (of shape) by p: axis by axis, shrinking
// axes first, or in one pass for the bilinear resizing of the two
// innermost axes that segmentation and detection heads run.
func resizeFloat[T float32 | float64](x []T, shape []int, p *ResizePlan) []T {
	r := len(shape)
	axes := slices.Clone(p.Axes)
	sort.SliceStable(axes, func(i, j int) bool {
		return float64(axes[i].Out)*float64(axes[j].In) < float64(axes[j].Out)*float64(axes[i].In)
	})
	var out []T
	if f, ok := any(x).([]float32); ok && len(axes) == 2 && bilinear2D(axes, r) {
		ya, xa := &axes[0], &axes[1]
		if ya.Axis > xa.Axis {
			ya, xa = xa, ya
		}
		planes := 1
		for _, d := range shape[:r-2] {
			planes *= d
		}
		out = any(resizeBilinear2D(f, planes, shape[r-2], shape[r-1], ya, xa)).([]T)
	} else {
		cur := slices.Clone(shape)
		out = x
		for i := range axes {
			ax := &axes[i]
			outer, inner := 1, 1
			for _, d := range cur[:ax.Axis] {
				outer *= d
			}
			for _, d := range cur[ax.Axis+1:] {
				inner *= d
			}
			out = resizePass(out, outer, ax.In, inner, ax)
			cur[ax.Axis] = ax.Out
		}
	}
	resizeExtrapolate(out, p)
	return out
}

// bilinear2D reports whether the two axes are the innermost two of a
// rank-r tensor, each with two taps and nothing to extrapolate: the case
// resizeBilinear2D runs.
func bilinear2D(axes []ResizeAxis, r int) bool {
	for _, ax := range axes {
		if ax.Taps != 2 || ax.Outside != nil {
			return false
		}
	}
	a, b := min(axes[0].Axis, axes[1].Axis), max(axes[0].Axis, axes[1].Axis)
	return r >= 2 && a == r-2 && b == r-1
}

// resizeWeights converts an axis's weights to T.
func resizeWeights[T float32 | float64](ax *ResizeAxis) []T {
	w := make([]T, len(ax.Weight))
	for i, v := range ax.Weight {
		w[i] = T(v)
	}
	return w
}

// resizePass resamples the middle axis of src viewed as (outer, in, inner).
func resizePass[T float32 | float64](src []T, outer, in, inner int, ax *ResizeAxis) []T {
	out := ax.Out
	dst := make([]T, outer*out*inner)
	w := resizeWeights[T](ax)
	taps := ax.Taps
	for o := 0; o < outer; o++ {
		s := src[o*in*inner : (o+1)*in*inner]
		d := dst[o*out*inner : (o+1)*out*inner]
		if inner == 1 {
			for j := range d {
				var acc T
				for k := j * taps; k < (j+1)*taps; k++ {
					acc += w[k] * s[ax.Index[k]]
				}
				d[j] = acc
			}
			continue
		}
		for j := 0; j < out; j++ {
			row := d[j*inner : (j+1)*inner]
			if taps == 2 {
				i0, i1 := ax.Index[2*j], ax.Index[2*j+1]
				w0, w1 := w[2*j], w[2*j+1]
				a, b := s[i0*inner:(i0+1)*inner], s[i1*inner:(i1+1)*inner]
				for i := range row {
					row[i] = w0*a[i] + w1*b[i]
				}
				continue
			}
			for k := j * taps; k < (j+1)*taps; k++ {
				wk := w[k]
				if wk == 0 {
					continue
				}
				a := s[ax.Index[k]*inner : (ax.Index[k]+1)*inner]
				for i := range row {
					row[i] += wk * a[i]
				}
			}
		}
	}
	return dst
}

// resizeBilinear2D resizes planes of ih×iw float32 pixels to
// ya.Out×xa.Out with two taps per axis. Each output row blends two
// horizontally resized input rows; those are computed once and kept while
// consecutive output rows read them.
func resizeBilinear2D(src []float32, planes, ih, iw int, ya, xa *ResizeAxis) []float32 {
	oh, ow := ya.Out, xa.Out
	dst := make([]float32, planes*oh*ow)
	x0, x1 := make([]int, ow), make([]int, ow)
	wx0, wx1 := make([]float32, ow), make([]float32, ow)
	for x := 0; x < ow; x++ {
		x0[x], x1[x] = xa.Index[2*x], xa.Index[2*x+1]
		wx0[x], wx1[x] = float32(xa.Weight[2*x]), float32(xa.Weight[2*x+1])
	}
	wy := resizeWeights[float32](ya)
	var cache [2][]float32
	cache[0], cache[1] = make([]float32, ow), make([]float32, ow)
	for p := 0; p < planes; p++ {
		in := src[p*ih*iw : (p+1)*ih*iw]
		out := dst[p*oh*ow : (p+1)*oh*ow]
		held := [2]int{-1, -1}
		row := func(y, keep int) []float32 {
			if held[0] == y {
				return cache[0]
			}
			if held[1] == y {
				return cache[1]
			}
			slot := 0
			if held[0] == keep {
				slot = 1
			}
			h, line := cache[slot], in[y*iw:(y+1)*iw]
			for x := range h {
				h[x] = wx0[x]*line[x0[x]] + wx1[x]*line[x1[x]]
			}
			held[slot] = y
			return h
		}
		for oy := 0; oy < oh; oy++ {
			y0, y1 := ya.Index[2*oy], ya.Index[2*oy+1]
			w0, w1 := wy[2*oy], wy[2*oy+1]
			o := out[oy*ow : (oy+1)*ow]
			switch {
			case w1 == 0 || y0 == y1 && w0+w1 == 1:
				r0 := row(y0, -1)
				if w0+w1 == 1 {
					copy(o, r0)
				} else {
					for x := range o {
						o[x] = (w0 + w1) * r0[x]
					}
				}
			case w0 == 0:
				copy(o, row(y1, -1))
			default:
				r0 := row(y0, -1)
				r1 := row(y1, y0)
				for x := range o {
					o[x] = w0*r0[x] + w1*r1[x]
				}
			}
		}
	}
	return dst
}

// resizeExtrapolate writes the extrapolation value where any axis samples
// outside the input (tf_crop_and_resize).
func resizeExtrapolate[T float32 | float64](out []T, p *ResizePlan) {
	outside := make([][]bool, len(p.Shape))
	some := false
	for _, ax := range p.Axes {
		if ax.Outside != nil && slices.Contains(ax.Outside, true) {
			outside[ax.Axis], some = ax.Outside, true
		}
	}
	if !some {
		return
	}
	v := T(p.Extrapolation)
	it := tensor.NewIter(p.Shape)
	for i := 0; it.Next(); i++ {
		for d, o := range it.Index() {
			if outside[d] != nil && outside[d][o] {
				out[i] = v
				break
			}
		}
	}
}
