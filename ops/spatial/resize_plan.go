package spatial

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

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

// ResizePlanOf resolves a compiled Resize or Upsample node on its inputs,
// given its op type, parsed attributes (a *ResizeAttrs, *Resize18Attrs,
// *ResizeModeAttrs or *UpsampleAttrs) and opset. The gradient of Resize
// applies the transposed plan to dY.
func ResizePlanOf(op string, params any, opset int64, in []*tensor.Tensor) (*ResizePlan, error) {
	c, err := resizeConfigOf(op, params, opset)
	if err != nil {
		return nil, err
	}
	return c.plan(in)
}

// resizeFloats reads a float tensor input (scales, roi) as float64.
func resizeFloats(t *tensor.Tensor, name string) ([]float64, error) {
	if !t.DType.IsFloat() || t.Rank() > 1 {
		return nil, ops.InputErrorf("Resize %s must be a 1-D floating-point tensor, got %v%s", name, t.DType, tensor.ShapeString(t.Shape))
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
func (c *resizeConfig) plan(in []*tensor.Tensor) (*ResizePlan, error) { return c.planFor(nil, in) }

// planFor is plan reserving the sampling tables from ctx (nil: none)
// before it makes them.
func (c *resizeConfig) planFor(ctx *ops.Context, in []*tensor.Tensor) (*ResizePlan, error) {
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
			d, err := ops.NormAxis(a, r)
			if err != nil {
				return nil, err
			}
			if seen[d] {
				return nil, ops.InputErrorf("Resize axes %v repeat axis %d", c.axes, d)
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
			return nil, ops.InputErrorf("Resize roi has %d values for %d axes, needs %d", len(v), len(axes), 2*len(axes))
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
			return nil, ops.InputErrorf("Resize takes scales or sizes, not both")
		}
	}
	if scales != nil {
		if len(scales) != len(axes) {
			return nil, ops.InputErrorf("%s has %d scales for %d axes", c.op, len(scales), len(axes))
		}
		for i, d := range axes {
			s := scales[i]
			if !(s > 0) || math.IsInf(s, 0) || c.atLeast1 && s < 1 {
				return nil, ops.InputErrorf("%s scale %v is invalid", c.op, s)
			}
			o := math.Floor(s * float64(x.Shape[d]))
			if o > tensor.MaxElements {
				return nil, ops.InputErrorf("%s output dimension %v is too large", c.op, o)
			}
			scale[d], out[d] = s, int(o)
		}
	} else {
		sz := c.input(in, c.sizesIn)
		if sz == nil {
			return nil, ops.InputErrorf("Resize needs scales or sizes")
		}
		sizes, err := sz.Int64s()
		if err != nil || sz.Rank() != 1 || len(sizes) != len(axes) {
			return nil, ops.InputErrorf("Resize sizes must be a 1-D integer tensor of %d values, got %v%s", len(axes), sz.DType, tensor.ShapeString(sz.Shape))
		}
		for i, d := range axes {
			if sizes[i] < 0 || sizes[i] > tensor.MaxElements {
				return nil, ops.InputErrorf("Resize size %d is invalid", sizes[i])
			}
			if x.Shape[d] == 0 {
				if sizes[i] != 0 {
					return nil, ops.InputErrorf("Resize cannot make %d elements of an empty axis", sizes[i])
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
					return nil, ops.InputErrorf("Resize output dimension %v is too large", o)
				}
				scale[d], out[d] = pick, int(o)
			}
		}
	}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	p := &ResizePlan{Shape: out, Nearest: c.mode == resizeNearest, Extrapolation: c.extrap}
	if total == 0 {
		return p, nil
	}
	for d := range r {
		ax, err := c.axis(ctx, d, x.Shape[d], out[d], scale[d], roiLo[d], roiHi[d])
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

// axis computes the taps of axis d, reserving its tables from ctx first.
func (c *resizeConfig) axis(ctx *ops.Context, d, in, out int, scale, roiLo, roiHi float64) (ResizeAxis, error) {
	ax := ResizeAxis{Axis: d, In: in, Out: out}
	clampIdx := func(i int) int { return min(max(i, 0), in-1) }
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
		return ax, ops.InputErrorf("%s: scale %v needs too many taps along axis %d", c.op, scale, d)
	}
	if err := ctx.Reserve(int64(out) * (int64(ax.Taps)*16 + 1)); err != nil { // an index and a weight per tap
		return ax, err
	}
	if c.ctm == "tf_crop_and_resize" {
		ax.Outside = make([]bool, out)
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
