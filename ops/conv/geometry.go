package conv

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// ConvAttrs are the attributes of Conv, ConvInteger and QLinearConv.
type ConvAttrs struct {
	AutoPad     string  `onnx:"auto_pad" default:"NOTSET"`
	Dilations   []int64 `onnx:"dilations"`
	Group       int64   `onnx:"group" default:"1"`
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
}

// ConvTransposeAttrs are the attributes of ConvTranspose.
type ConvTransposeAttrs struct {
	AutoPad       string  `onnx:"auto_pad" default:"NOTSET"`
	Dilations     []int64 `onnx:"dilations"`
	Group         int64   `onnx:"group" default:"1"`
	KernelShape   []int64 `onnx:"kernel_shape"`
	OutputPadding []int64 `onnx:"output_padding"`
	OutputShape   []int64 `onnx:"output_shape"`
	Pads          []int64 `onnx:"pads"`
	Strides       []int64 `onnx:"strides"`
}

// Geometry is the index map of a convolution over d spatial axes: the
// output at position o (per axis) reads the input at
// o·Strides − PadBegin + k·Dilations for each kernel offset k, where that
// lies inside In; positions outside read zero.
//
// The input has C channels at each In position, the output M at each Out
// position, in Group groups; the weight is [M, C/Group, Kernel...]. A
// ConvTranspose is the adjoint of such a convolution: its input lives at
// the Out positions (M channels), its output at the In positions (C
// channels), with the same weight layout.
type Geometry struct {
	Batch, C, M, Group int
	In, Out, Kernel    []int
	Strides, Dilations []int
	PadBegin           []int

	taps *taps // made once for a geometry kept across runs (keptGeometry)
}

// InSize, OutSize and KernelSize are the products of In, Out and Kernel.
func (g *Geometry) InSize() int     { return ops.ProdInts(g.In) }
func (g *Geometry) OutSize() int    { return ops.ProdInts(g.Out) }
func (g *Geometry) KernelSize() int { return ops.ProdInts(g.Kernel) }

func (g *Geometry) cg() int { return g.C / g.Group }
func (g *Geometry) mg() int { return g.M / g.Group }

// depthwise reports a convolution of one input channel per group over one
// or two spatial axes, which runs on the direct loop.
func (g *Geometry) depthwise() bool {
	return g.Group > 1 && g.cg() == 1 && len(g.In) <= 2
}

// direct reports a geometry whose im2col rows are the channels-last image
// itself: a 1×1 kernel, unit strides, no padding, one group.
func (g *Geometry) direct() bool {
	if g.Group != 1 || g.KernelSize() != 1 {
		return false
	}
	for i := range g.In {
		if g.Strides[i] != 1 || g.PadBegin[i] != 0 || g.Out[i] != g.In[i] {
			return false
		}
	}
	return true
}

// maxAttr bounds every geometry attribute, so sums and products of a few
// of them cannot overflow.
const maxAttr = 1 << 32

// checkAttrs validates the attributes every convolution shares, at load:
// values a model may not hold are malformed.
func checkAttrs(autoPad string, group int64, kernel, strides, dilations, pads []int64) error {
	switch autoPad {
	case "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID":
	default:
		return fmt.Errorf("auto_pad %q is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
	}
	if group < 1 || group > maxAttr {
		return fmt.Errorf("group %d must be positive", group)
	}
	for _, a := range []struct {
		name string
		v    []int64
		min  int64
	}{{"kernel_shape", kernel, 1}, {"strides", strides, 1}, {"dilations", dilations, 1}, {"pads", pads, 0}} {
		for _, x := range a.v {
			if x < a.min || x > maxAttr {
				return fmt.Errorf("%s %v: each value must lie in [%d, 2^32]", a.name, a.v, a.min)
			}
		}
	}
	if len(pads)%2 != 0 {
		return fmt.Errorf("pads %v must have two values per spatial axis", pads)
	}
	return nil
}

// axesOf returns attribute v as d ints, def when absent.
func axesOf(name string, v []int64, d, def int) ([]int, error) {
	out := make([]int, d)
	if v == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != d {
		return nil, ops.InputErrorf("%s %v has %d values for %d spatial axes", name, v, len(v), d)
	}
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

// checkShapes checks the ranks of x and w and the kernel_shape attribute
// against w; it returns the number of spatial axes.
func checkShapes(op string, x, w []int, kernel []int64) (int, error) {
	if len(w) < 3 {
		return 0, ops.InputErrorf("%s weight must have rank >= 3, got %s", op, tensor.ShapeString(w))
	}
	d := len(w) - 2
	if len(x) != d+2 {
		return 0, ops.InputErrorf("%s input %s must have rank %d for weight %s", op, tensor.ShapeString(x), d+2, tensor.ShapeString(w))
	}
	if kernel != nil {
		if len(kernel) != d {
			return 0, ops.InputErrorf("%s kernel_shape %v does not fit weight %s", op, kernel, tensor.ShapeString(w))
		}
		for i, k := range kernel {
			if int(k) != w[2+i] {
				return 0, ops.InputErrorf("%s kernel_shape %v does not fit weight %s", op, kernel, tensor.ShapeString(w))
			}
		}
	}
	for _, k := range w[2:] {
		if k < 1 {
			return 0, ops.InputErrorf("%s weight %s has an empty kernel", op, tensor.ShapeString(w))
		}
	}
	return d, nil
}

// checkHeldShape checks a weight known at load (shape w) against the
// kernel_shape attribute, as far as it can be checked without the input.
func checkHeldShape(op string, w []int, kernel []int64) error {
	_, err := checkShapes(op, append([]int{0, 0}, w[min(2, len(w)):]...), w, kernel)
	return err
}

// Geometry resolves the convolution of input shape x by weight shape w.
func (a *ConvAttrs) Geometry(x, w []int) (*Geometry, error) {
	return forwardGeometry("Conv", x, w, a.AutoPad, int(a.Group), a.KernelShape, a.Strides, a.Dilations, a.Pads)
}

func forwardGeometry(op string, x, w []int, autoPad string, group int, kernel, strides, dilations, pads []int64) (*Geometry, error) {
	d, err := checkShapes(op, x, w, kernel)
	if err != nil {
		return nil, err
	}
	g := &Geometry{Batch: x[0], C: x[1], M: w[0], Group: group, In: x[2:], Kernel: w[2:]}
	if g.C != w[1]*group {
		return nil, ops.InputErrorf("%s input has %d channels, weight %s with group %d takes %d", op, g.C, tensor.ShapeString(w), group, w[1]*group)
	}
	if g.M%group != 0 {
		return nil, ops.InputErrorf("%s weight %s has %d output channels, not a multiple of group %d", op, tensor.ShapeString(w), g.M, group)
	}
	if g.Strides, err = axesOf("strides", strides, d, 1); err != nil {
		return nil, err
	}
	if g.Dilations, err = axesOf("dilations", dilations, d, 1); err != nil {
		return nil, err
	}
	p, err := axesOf("pads", pads, 2*d, 0)
	if err != nil {
		return nil, err
	}
	g.Out, g.PadBegin = make([]int, d), make([]int, d)
	for i := 0; i < d; i++ {
		in, k, s, dil := g.In[i], g.Kernel[i], g.Strides[i], g.Dilations[i]
		ext := (k-1)*dil + 1
		switch autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			out := (in + s - 1) / s
			total := max(0, (out-1)*s+ext-in)
			g.PadBegin[i] = total / 2
			if autoPad == "SAME_LOWER" {
				g.PadBegin[i] = total - total/2
			}
			g.Out[i] = out
			continue
		case "VALID":
			p[i], p[i+d] = 0, 0
		}
		span := in + p[i] + p[i+d]
		if in == 0 { // an empty axis stays empty
			g.Out[i], g.PadBegin[i] = 0, p[i]
			continue
		}
		if span < ext {
			return nil, ops.InputErrorf("%s input %s with pads %v is smaller than the kernel %v (dilations %v) along axis %d", op, tensor.ShapeString(x), p, g.Kernel, g.Dilations, i+2)
		}
		g.Out[i] = (span-ext)/s + 1
		g.PadBegin[i] = p[i]
	}
	if _, err := tensor.NumElements(append([]int{g.Batch, g.M}, g.Out...)); err != nil {
		return nil, ops.InputErrorf("%s output: %v", op, err)
	}
	return g, nil
}

// Geometry resolves the ConvTranspose of input shape x by weight shape w
// in a model of the given opset, as the geometry of the convolution it is
// the adjoint of.
func (a *ConvTransposeAttrs) Geometry(x, w []int, opset int64) (*Geometry, error) {
	const op = "ConvTranspose"
	d, err := checkShapes(op, x, w, a.KernelShape)
	if err != nil {
		return nil, err
	}
	group := int(a.Group)
	g := &Geometry{Batch: x[0], C: w[1] * group, M: w[0], Group: group, Out: x[2:], Kernel: w[2:]}
	if x[1] != w[0] {
		return nil, ops.InputErrorf("%s input has %d channels, weight %s takes %d", op, x[1], tensor.ShapeString(w), w[0])
	}
	if g.M%group != 0 {
		return nil, ops.InputErrorf("%s weight %s has %d input channels, not a multiple of group %d", op, tensor.ShapeString(w), g.M, group)
	}
	if g.Strides, err = axesOf("strides", a.Strides, d, 1); err != nil {
		return nil, err
	}
	if g.Dilations, err = axesOf("dilations", a.Dilations, d, 1); err != nil {
		return nil, err
	}
	outPad, err := axesOf("output_padding", a.OutputPadding, d, 0)
	if err != nil {
		return nil, err
	}
	var outShape []int
	if os := a.OutputShape; os != nil {
		if len(os) == d+2 { // the whole shape; only its spatial part counts
			os = os[2:]
		}
		if outShape, err = axesOf("output_shape", os, d, 0); err != nil {
			return nil, err
		}
	}
	g.In, g.PadBegin = make([]int, d), make([]int, d)
	var pads []int
	if a.Pads != nil {
		if pads, err = axesOf("pads", a.Pads, 2*d, 0); err != nil {
			return nil, err
		}
	}
	same := a.AutoPad == "SAME_UPPER" || a.AutoPad == "SAME_LOWER"
	for i := 0; i < d; i++ {
		in, k, s, dil := g.Out[i], g.Kernel[i], g.Strides[i], g.Dilations[i]
		full := s*(in-1) + outPad[i] + (k-1)*dil + 1
		switch {
		case pads == nil && same:
			out := in * s
			if outShape != nil {
				out = outShape[i]
			}
			total := full - out
			small := floorDiv(total, 2)
			// Opset 11 puts the smaller half first for SAME_UPPER; opset
			// 1 put it last.
			first := small
			if (a.AutoPad == "SAME_UPPER") != (opset >= 11) {
				first = total - small
			}
			g.PadBegin[i], g.In[i] = first, out
		case pads == nil:
			g.In[i] = full
			if outShape != nil {
				g.In[i] = outShape[i]
			}
		default:
			g.PadBegin[i] = pads[i]
			g.In[i] = full - pads[i] - pads[i+d]
			if outShape != nil {
				g.In[i] = outShape[i]
			}
		}
		if g.In[i] < 0 {
			return nil, ops.InputErrorf("%s output size %d along axis %d is negative (input %s, pads %v)", op, g.In[i], i+2, tensor.ShapeString(x), a.Pads)
		}
	}
	if _, err := tensor.NumElements(append([]int{g.Batch, g.C}, g.In...)); err != nil {
		return nil, ops.InputErrorf("%s output: %v", op, err)
	}
	return g, nil
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
