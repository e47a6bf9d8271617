package spatial

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Resize resamples a tensor along its axes: nearest, linear or cubic,
// under one of the coordinate transformations, by scales or sizes.
// Upsample (upsample.go) is its older form. Every form compiles to a
// resizeConfig; its plan (resize_plan.go) resolves the inputs into the
// taps of each axis, which resize_apply.go runs.

// Resize is the Resize operator, by opset range.
var Resize = ops.Op{
	ops.Register(ops.Descriptor{Type: "Resize", Since: 10, Until: 10, Fold: true}, buildResize10),
	ops.Register(ops.Descriptor{Type: "Resize", Since: 11, Until: 17, Fold: true}, buildResize11),
	ops.Register(ops.Descriptor{Type: "Resize", Since: 18, Fold: true}, buildResize18),
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

// resizeConfig is every form of Resize and Upsample reduced to one: the
// compiled operator.
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
		mode, c.scalesAttr, c.atLeast1, c.required = at.Mode, slices.Clone(at.Scales), true, 1
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
		c.antialias, c.axes, c.policy = at.Antialias, slices.Clone(at.Axes), at.KeepAspectRatioPolicy
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
			return nil, ops.Unsupportedf("%s mode %q at opset %d", op, mode, opset)
		}
		c.mode = resizeCubic
	default:
		return nil, ops.Unsupportedf("%s mode %q", op, mode)
	}
	switch c.ctm {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize":
	case "tf_half_pixel_for_nn":
		if opset >= 13 {
			return nil, ops.Unsupportedf("Resize coordinate_transformation_mode %q at opset %d (removed in 13)", c.ctm, opset)
		}
	case "half_pixel_symmetric":
		if opset < 19 {
			return nil, ops.Unsupportedf("Resize coordinate_transformation_mode %q at opset %d (added in 19)", c.ctm, opset)
		}
	default:
		return nil, ops.Unsupportedf("Resize coordinate_transformation_mode %q", c.ctm)
	}
	switch c.nearest {
	case "", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, ops.Unsupportedf("Resize nearest_mode %q", c.nearest)
	}
	switch c.policy {
	case "stretch", "not_larger", "not_smaller":
	default:
		return nil, ops.Unsupportedf("Resize keep_aspect_ratio_policy %q", c.policy)
	}
	if c.exclude && c.mode != resizeCubic {
		c.exclude = false // only cubic has weights outside the input
	}
	return c, nil
}

// buildResize10 builds Resize at opset 10 and Upsample at opset 9.
func buildResize10(n *ops.Node, at *ResizeModeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	c, err := resizeConfigOf(n.Type, at, n.Opset)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func buildResize11(n *ops.Node, at *ResizeAttrs) (ops.Operator, error) {
	c, err := resizeConfigOf("Resize", at, n.Opset)
	if err != nil {
		return nil, err
	}
	if err := n.CheckArity(c.required, 4, 1, 1); err != nil {
		return nil, err
	}
	return c, nil
}

func buildResize18(n *ops.Node, at *Resize18Attrs) (ops.Operator, error) {
	c, err := resizeConfigOf("Resize", at, n.Opset)
	if err != nil {
		return nil, err
	}
	if err := n.CheckArity(1, 4, 1, 1); err != nil {
		return nil, err
	}
	return c, nil
}

// Run resamples in[0] by the plan its other inputs give.
func (c *resizeConfig) Run(ctx *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) < c.required || in[0] == nil {
		return nil, ops.InputErrorf("%s needs %d inputs", c.op, c.required)
	}
	x := in[0]
	p, err := c.planFor(ctx, in)
	if err != nil {
		return nil, err
	}
	y, err := resizeApply(ctx, x, p)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
