package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

// The geometry family: operators that move elements between positions
// (Pad, CenterCropPad, DepthToSpace, SpaceToDepth, Col2Im) or sample an
// image at computed positions (GridSample, AffineGrid's grids). Resize and
// Upsample live in op_resize.go and share the gather below.

func init() {
	register(Descriptor{Type: "Pad", Since: 2, Until: 10, Fold: true}, buildPad2)
	register(Descriptor{Type: "Pad", Since: 11, Fold: true}, buildPad11)
	register(Descriptor{Type: "CenterCropPad", Since: 18, Fold: true}, buildCenterCropPad)
	register(Descriptor{Type: "DepthToSpace", Since: 1, Until: 10, Fold: true}, buildDepthToSpace1)
	register(Descriptor{Type: "DepthToSpace", Since: 11, Fold: true}, buildDepthToSpace)
	register(Descriptor{Type: "SpaceToDepth", Since: 1, Fold: true}, buildSpaceToDepth)
	register(Descriptor{Type: "GridSample", Since: 16, Until: 19, Fold: true}, buildGridSample16)
	register(Descriptor{Type: "GridSample", Since: 20, Fold: true}, buildGridSample)
	register(Descriptor{Type: "AffineGrid", Since: 20, Fold: true}, buildAffineGrid)
	register(Descriptor{Type: "Col2Im", Since: 18, Fold: true}, buildCol2Im)
}

// PadAttrs are Pad's attributes before opset 11, where the pads and the
// constant are attributes.
type PadAttrs struct {
	Mode  string  `onnx:"mode" default:"constant"`
	Pads  []int64 `onnx:"pads"`
	Value float32 `onnx:"value"`
}

// Pad11Attrs are Pad's attributes from opset 11 on: pads, the constant and
// (opset 18) the axes are inputs.
type Pad11Attrs struct {
	Mode string `onnx:"mode" default:"constant"`
}

// CenterCropPadAttrs are CenterCropPad's attributes.
type CenterCropPadAttrs struct {
	Axes []int64 `onnx:"axes"` // nil: every axis
}

// DepthToSpace1Attrs are DepthToSpace's attributes before opset 11 (DCR
// order only).
type DepthToSpace1Attrs struct {
	Blocksize int64 `onnx:"blocksize"`
}

// DepthToSpaceAttrs are DepthToSpace's attributes from opset 11 on.
type DepthToSpaceAttrs struct {
	Blocksize int64  `onnx:"blocksize"`
	Mode      string `onnx:"mode" default:"DCR"`
}

// SpaceToDepthAttrs are SpaceToDepth's attributes.
type SpaceToDepthAttrs struct {
	Blocksize int64 `onnx:"blocksize"`
}

// GridSample16Attrs are GridSample's attributes at opsets 16–19 (2-D
// images; modes bilinear, nearest, bicubic).
type GridSample16Attrs struct {
	AlignCorners bool   `onnx:"align_corners"`
	Mode         string `onnx:"mode" default:"bilinear"`
	PaddingMode  string `onnx:"padding_mode" default:"zeros"`
}

// GridSampleAttrs are GridSample's attributes from opset 20 on (any
// number of spatial dimensions; modes linear, nearest, cubic).
type GridSampleAttrs struct {
	AlignCorners bool   `onnx:"align_corners"`
	Mode         string `onnx:"mode" default:"linear"`
	PaddingMode  string `onnx:"padding_mode" default:"zeros"`
}

// AffineGridAttrs are AffineGrid's attributes.
type AffineGridAttrs struct {
	AlignCorners bool `onnx:"align_corners"`
}

// Col2ImAttrs are Col2Im's attributes; nil means ones (dilations,
// strides) or zeros (pads).
type Col2ImAttrs struct {
	Dilations []int64 `onnx:"dilations"`
	Pads      []int64 `onnx:"pads"`
	Strides   []int64 `onnx:"strides"`
}

// ---- the gather shared by Pad, CenterCropPad and Resize (nearest) ----

// geomGather returns the tensor of shape out whose element at index
// (o_0, ..., o_r-1) is x's element at (src[0][o_0], ..., src[r-1][o_r-1]),
// or fill (a scalar of x's type; nil for zero) where any of those is
// negative. len(src[d]) == out[d]; every entry is < x.Shape[d].
func geomGather(x *tensor.Tensor, out []int, src [][]int, fill *tensor.Tensor) (*tensor.Tensor, error) {
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[float32](fill))
	case []float64:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[float64](fill))
	case []tensor.F16:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[tensor.F16](fill))
	case []tensor.BF16:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[tensor.BF16](fill))
	case []int8:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[int8](fill))
	case []uint8:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[uint8](fill))
	case []int16:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[int16](fill))
	case []uint16:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[uint16](fill))
	case []int32:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[int32](fill))
	case []uint32:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[uint32](fill))
	case []int64:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[int64](fill))
	case []uint64:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[uint64](fill))
	case []bool:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[bool](fill))
	case []string:
		data = gatherAxes(d, x.Shape, out, n, src, fillOf[string](fill))
	default:
		return nil, inputErrorf("cannot rearrange %v tensors", x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: slices.Clone(out), Data: data}, nil
}

func fillOf[T any](t *tensor.Tensor) T {
	var z T
	if t == nil {
		return z
	}
	if d, ok := t.Data.([]T); ok && len(d) > 0 {
		return d[0]
	}
	return z
}

// geomSegment is a run of one output row: n elements copied from the
// source row at src on, or filled when src < 0.
type geomSegment struct{ at, n, src int }

// geomSegments splits a last-axis source map into runs of consecutive
// source positions and runs of fill.
func geomSegments(src []int) []geomSegment {
	var segs []geomSegment
	for i := 0; i < len(src); {
		j := i + 1
		if src[i] < 0 {
			for j < len(src) && src[j] < 0 {
				j++
			}
		} else {
			for j < len(src) && src[j] == src[j-1]+1 {
				j++
			}
		}
		segs = append(segs, geomSegment{at: i, n: j - i, src: src[i]})
		i = j
	}
	return segs
}

// gatherAxes is geomGather on a slice: rows along the last axis are built
// by copying runs (when the source map has long runs: Pad, crops) or by a
// per-element gather (Resize), and a row whose source row is that of the
// row before (nearest upsampling repeats rows) is copied from it.
func gatherAxes[T any](xs []T, in, out []int, n int, src [][]int, fill T) []T {
	res := make([]T, n)
	if n == 0 {
		return res
	}
	r := len(out)
	if r == 0 {
		res[0] = xs[0]
		return res
	}
	st := tensor.Strides(in)
	w := out[r-1]
	last := src[r-1]
	segs := geomSegments(last)
	bySegs := len(segs)*4 <= w
	hasFill := slices.ContainsFunc(last, func(s int) bool { return s < 0 })
	idx := make([]int, r-1)
	prevBase, prevRow := 0, -1
	for row := 0; row*w < n; row++ {
		base := 0
		for d := 0; d < r-1; d++ {
			s := src[d][idx[d]]
			if s < 0 {
				base = -1
				break
			}
			base += s * st[d]
		}
		dst := res[row*w : (row+1)*w]
		switch {
		case prevRow >= 0 && base == prevBase:
			copy(dst, res[prevRow*w:(prevRow+1)*w])
		case base < 0:
			for i := range dst {
				dst[i] = fill
			}
		case bySegs:
			for _, sg := range segs {
				if sg.src < 0 {
					for i := sg.at; i < sg.at+sg.n; i++ {
						dst[i] = fill
					}
				} else {
					copy(dst[sg.at:sg.at+sg.n], xs[base+sg.src:base+sg.src+sg.n])
				}
			}
		case hasFill:
			for i, s := range last {
				if s < 0 {
					dst[i] = fill
				} else {
					dst[i] = xs[base+s]
				}
			}
		default:
			row := xs[base:]
			for i, s := range last {
				dst[i] = row[s]
			}
		}
		prevBase, prevRow = base, row
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < out[d] {
				break
			}
			idx[d] = 0
		}
	}
	return res
}

// ---- Pad ----

// padMode names Pad's modes; wrap is valid from opset 19.
func padModeValid(mode string, opset int64) error {
	switch mode {
	case "constant", "reflect", "edge":
		return nil
	case "wrap":
		if opset >= 19 {
			return nil
		}
	}
	return unsupportedf("Pad mode %q at opset %d", mode, opset)
}

// padSource resolves Pad along every axis of shape: pads holds the begin
// then the end amounts of each axis (negative amounts crop). It returns the
// output shape and, per axis, the input index each output index reads (-1
// for the constant). Cropping applies first; reflect, edge and wrap then
// extend what is left, reflecting and wrapping as often as the pads need.
func padSource(shape []int, mode string, pads []int64) ([]int, [][]int, error) {
	r := len(shape)
	if len(pads) != 2*r {
		return nil, nil, inputErrorf("Pad has %d pads for a rank-%d input, needs %d", len(pads), r, 2*r)
	}
	out := make([]int, r)
	kept := make([][2]int, r) // per axis, the part of the input kept, before padding
	for d, dim := range shape {
		b, e := pads[d], pads[d+r]
		if b < -int64(dim) || e < -int64(dim) || b > tensor.MaxElements || e > tensor.MaxElements {
			return nil, nil, inputErrorf("Pad pads %d, %d do not fit axis %d of size %d", b, e, d, dim)
		}
		lo, hi := max(-int(b), 0), dim-max(-int(e), 0)
		if hi < lo {
			return nil, nil, inputErrorf("Pad pads %d, %d crop more than axis %d has (%d)", b, e, d, dim)
		}
		size := dim + int(b) + int(e)
		if size < 0 || size > tensor.MaxElements {
			return nil, nil, inputErrorf("Pad pads %d, %d give axis %d size %d", b, e, d, size)
		}
		if hi == lo && size > 0 && mode != "constant" {
			return nil, nil, inputErrorf("Pad cannot %s-pad axis %d: nothing is left of it", mode, d)
		}
		out[d], kept[d] = size, [2]int{lo, hi}
	}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, nil, inputErrorf("Pad output %v: %v", out, err)
	}
	src := make([][]int, r)
	if total == 0 {
		return out, src, nil // nothing to read; no maps (an axis may be long)
	}
	for d := range shape {
		lo, m := kept[d][0], kept[d][1]-kept[d][0]
		pb := max(int(pads[d]), 0)
		s := make([]int, out[d])
		for o := range s {
			p := o - pb // position in the kept part
			if p >= 0 && p < m {
				s[o] = lo + p
				continue
			}
			switch mode {
			case "constant":
				s[o] = -1
				continue
			case "edge":
				p = min(max(p, 0), m-1)
			case "wrap":
				p = ((p % m) + m) % m
			case "reflect":
				if m == 1 {
					p = 0
					break
				}
				period := 2 * (m - 1)
				p = ((p % period) + period) % period
				if p >= m {
					p = period - p
				}
			}
			s[o] = lo + p
		}
		src[d] = s
	}
	return out, src, nil
}

// PadMap resolves a compiled Pad node (st) on its inputs: the output shape
// and, per axis, the input index each output index reads, -1 where the
// output holds the constant (no maps when the output is empty). The
// gradient of Pad sums dY back along it.
func PadMap(st Step, in []*tensor.Tensor) ([]int, [][]int, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, nil, fmt.Errorf("Pad has no input")
	}
	switch at := st.Params.(type) {
	case *PadAttrs:
		return padSource(in[0].Shape, at.Mode, at.Pads)
	case *Pad11Attrs:
		pads, err := padInputs(in, st.Opset)
		if err != nil {
			return nil, nil, err
		}
		return padSource(in[0].Shape, at.Mode, pads)
	}
	return nil, nil, fmt.Errorf("model: PadMap of a %s node", st.Op)
}

func buildPad2(n *node, at *PadAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := padModeValid(at.Mode, n.opset); err != nil {
		return nil, err
	}
	if at.Pads == nil {
		return nil, fmt.Errorf("Pad needs the pads attribute")
	}
	value := tensor.Scalar(at.Value)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		out, src, err := padSource(x.Shape, at.Mode, at.Pads)
		if err != nil {
			return nil, err
		}
		fill, err := geomScalarAs(value, x.DType)
		if err != nil {
			return nil, err
		}
		return geomGather(x, out, src, fill)
	}), nil
}

// padInputs returns the begin-then-end pads for every axis of in[0] from
// Pad's pads and (opset 18 on) axes inputs.
func padInputs(in []*tensor.Tensor, opset int64) ([]int64, error) {
	x := in[0]
	if len(in) < 2 || in[1] == nil {
		return nil, inputErrorf("Pad needs its pads input")
	}
	pads, err := in[1].Int64s()
	if err != nil || in[1].Rank() > 1 {
		return nil, inputErrorf("Pad pads must be a 1-D integer tensor, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	if len(in) < 4 || in[3] == nil {
		return pads, nil
	}
	if opset < 18 {
		return nil, inputErrorf("Pad takes an axes input from opset 18 on")
	}
	axes, err := in[3].Int64s()
	if err != nil || in[3].Rank() > 1 {
		return nil, inputErrorf("Pad axes must be a 1-D integer tensor, got %v%s", in[3].DType, tensor.ShapeString(in[3].Shape))
	}
	r := x.Rank()
	if len(pads) != 2*len(axes) {
		return nil, inputErrorf("Pad has %d pads for %d axes, needs %d", len(pads), len(axes), 2*len(axes))
	}
	full := make([]int64, 2*r)
	seen := make([]bool, r)
	for i, ax := range axes {
		a, err := normAxis(ax, r)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, inputErrorf("Pad axes %v repeat axis %d", axes, a)
		}
		seen[a] = true
		full[a], full[a+r] = pads[i], pads[i+len(axes)]
	}
	return full, nil
}

func buildPad11(n *node, at *Pad11Attrs) (opFunc, error) {
	maxIn := 3
	if n.opset >= 18 {
		maxIn = 4
	}
	if err := n.checkArity(2, maxIn, 1, 1); err != nil {
		return nil, err
	}
	if err := padModeValid(at.Mode, n.opset); err != nil {
		return nil, err
	}
	opset := n.opset
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		pads, err := padInputs(in, opset)
		if err != nil {
			return nil, err
		}
		out, src, err := padSource(x.Shape, at.Mode, pads)
		if err != nil {
			return nil, err
		}
		var fill *tensor.Tensor
		if len(in) > 2 && in[2] != nil && in[2].Len() > 0 {
			if in[2].DType != x.DType || in[2].Len() != 1 {
				return nil, inputErrorf("Pad constant_value must be one %v, got %v%s", x.DType, in[2].DType, tensor.ShapeString(in[2].Shape))
			}
			fill = in[2]
		}
		y, err := geomGather(x, out, src, fill)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// geomScalarAs converts a one-element numeric tensor to type dt (strings
// and booleans take their zero value, which Pad and Resize fill them
// with).
func geomScalarAs(v *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	if dt == tensor.String || dt == tensor.Bool {
		return nil, nil
	}
	return castTo(v, dt)
}

// ---- CenterCropPad ----

func buildCenterCropPad(n *node, at *CenterCropPadAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		shape, err := in[1].Int64s()
		if err != nil || in[1].Rank() != 1 {
			return nil, inputErrorf("CenterCropPad shape must be a 1-D integer tensor, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
		}
		r := x.Rank()
		axes := at.Axes
		if axes == nil {
			axes = make([]int64, r)
			for i := range axes {
				axes[i] = int64(i)
			}
		}
		if len(shape) != len(axes) {
			return nil, inputErrorf("CenterCropPad has %d sizes for %d axes", len(shape), len(axes))
		}
		pads := make([]int64, 2*r)
		seen := make([]bool, r)
		for i, ax := range axes {
			a, err := normAxis(ax, r)
			if err != nil {
				return nil, err
			}
			if seen[a] {
				return nil, inputErrorf("CenterCropPad axes %v repeat axis %d", axes, a)
			}
			seen[a] = true
			want, dim := shape[i], int64(x.Shape[a])
			if want < 0 || want > tensor.MaxElements {
				return nil, inputErrorf("CenterCropPad size %d is invalid", want)
			}
			var b int64
			if want < dim {
				b = -((dim - want) / 2) // crop: the larger half at the end
			} else {
				b = (want - dim) / 2 // pad: the larger half at the end
			}
			pads[a], pads[a+r] = b, want-dim-b
		}
		out, src, err := padSource(x.Shape, "constant", pads)
		if err != nil {
			return nil, err
		}
		y, err := geomGather(x, out, src, nil)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// ---- DepthToSpace, SpaceToDepth ----

func buildDepthToSpace1(n *node, at *DepthToSpace1Attrs) (opFunc, error) {
	return depthToSpace(n, at.Blocksize, "DCR")
}

func buildDepthToSpace(n *node, at *DepthToSpaceAttrs) (opFunc, error) {
	return depthToSpace(n, at.Blocksize, at.Mode)
}

func depthToSpace(n *node, bs int64, mode string) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if bs < 1 || bs > 1<<16 {
		return nil, fmt.Errorf("DepthToSpace blocksize %d is invalid", bs)
	}
	if mode != "DCR" && mode != "CRD" {
		return nil, unsupportedf("DepthToSpace mode %q", mode)
	}
	b := int(bs)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() != 4 {
			return nil, inputErrorf("DepthToSpace takes a 4-D input, got %s", tensor.ShapeString(x.Shape))
		}
		nb, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		if c%(b*b) != 0 {
			return nil, inputErrorf("DepthToSpace: %d channels are not a multiple of blocksize² = %d", c, b*b)
		}
		co := c / (b * b)
		out := []int{nb, co, h * b, w * b}
		total, err := tensor.NumElements(out)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		idx := make([]int, 0, total)
		for in := 0; in < nb; in++ {
			for oc := 0; oc < co; oc++ {
				for oh := 0; oh < h*b; oh++ {
					y, i := oh/b, oh%b
					for ow := 0; ow < w*b; ow++ {
						xw, j := ow/b, ow%b
						var ic int
						if mode == "DCR" {
							ic = (i*b+j)*co + oc
						} else {
							ic = oc*b*b + i*b + j
						}
						idx = append(idx, ((in*c+ic)*h+y)*w+xw)
					}
				}
			}
		}
		return geomTake(x, out, idx)
	}), nil
}

func buildSpaceToDepth(n *node, at *SpaceToDepthAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Blocksize < 1 || at.Blocksize > 1<<16 {
		return nil, fmt.Errorf("SpaceToDepth blocksize %d is invalid", at.Blocksize)
	}
	b := int(at.Blocksize)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() != 4 {
			return nil, inputErrorf("SpaceToDepth takes a 4-D input, got %s", tensor.ShapeString(x.Shape))
		}
		nb, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		if h%b != 0 || w%b != 0 {
			return nil, inputErrorf("SpaceToDepth: %d×%d is not a multiple of blocksize %d", h, w, b)
		}
		ho, wo := h/b, w/b
		out := []int{nb, c * b * b, ho, wo}
		total, err := tensor.NumElements(out)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		idx := make([]int, 0, total)
		for in := 0; in < nb; in++ {
			for oc := 0; oc < c*b*b; oc++ {
				ic, blk := oc%c, oc/c
				i, j := blk/b, blk%b
				for oh := 0; oh < ho; oh++ {
					for ow := 0; ow < wo; ow++ {
						idx = append(idx, ((in*c+ic)*h+oh*b+i)*w+ow*b+j)
					}
				}
			}
		}
		return geomTake(x, out, idx)
	}), nil
}

// geomTake returns the tensor of shape out holding x's elements at idx.
func geomTake(x *tensor.Tensor, out []int, idx []int) (*tensor.Tensor, error) {
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data = takeT(d, idx)
	case []float64:
		data = takeT(d, idx)
	case []tensor.F16:
		data = takeT(d, idx)
	case []tensor.BF16:
		data = takeT(d, idx)
	case []int8:
		data = takeT(d, idx)
	case []uint8:
		data = takeT(d, idx)
	case []int16:
		data = takeT(d, idx)
	case []uint16:
		data = takeT(d, idx)
	case []int32:
		data = takeT(d, idx)
	case []uint32:
		data = takeT(d, idx)
	case []int64:
		data = takeT(d, idx)
	case []uint64:
		data = takeT(d, idx)
	case []bool:
		data = takeT(d, idx)
	case []string:
		data = takeT(d, idx)
	default:
		return nil, inputErrorf("cannot rearrange %v tensors", x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: out, Data: data}, nil
}

func takeT[T any](d []T, idx []int) []T {
	r := make([]T, len(idx))
	for i, j := range idx {
		r[i] = d[j]
	}
	return r
}

// ---- GridSample ----

const (
	gridNearest = iota
	gridLinear
	gridCubic
)

func buildGridSample16(n *node, at *GridSample16Attrs) (opFunc, error) {
	modes := map[string]int{"bilinear": gridLinear, "nearest": gridNearest, "bicubic": gridCubic}
	mode, ok := modes[at.Mode]
	if !ok {
		return nil, unsupportedf("GridSample mode %q at opset %d", at.Mode, n.opset)
	}
	return gridSample(n, mode, at.PaddingMode, at.AlignCorners, 2)
}

func buildGridSample(n *node, at *GridSampleAttrs) (opFunc, error) {
	modes := map[string]int{"linear": gridLinear, "nearest": gridNearest, "cubic": gridCubic}
	mode, ok := modes[at.Mode]
	if !ok {
		return nil, unsupportedf("GridSample mode %q at opset %d", at.Mode, n.opset)
	}
	return gridSample(n, mode, at.PaddingMode, at.AlignCorners, 0)
}

// gridSample builds GridSample; spatial is the number of spatial
// dimensions the opset allows (0: any).
func gridSample(n *node, mode int, padding string, align bool, spatial int) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	switch padding {
	case "zeros", "border", "reflection":
	default:
		return nil, unsupportedf("GridSample padding_mode %q", padding)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, grid := in[0], in[1]
		r := x.Rank() - 2
		if r < 1 || spatial != 0 && r != spatial {
			return nil, inputErrorf("GridSample takes an (N, C, spatial...) input with %s spatial dimensions, got %s", gridSpatialName(spatial), tensor.ShapeString(x.Shape))
		}
		if !grid.DType.IsFloat() {
			return nil, inputErrorf("GridSample grid must be floating point, got %v", grid.DType)
		}
		if grid.Rank() != r+2 || grid.Shape[0] != x.Shape[0] || grid.Shape[r+1] != r {
			return nil, inputErrorf("GridSample grid %s does not fit input %s: want (N, out..., %d)", tensor.ShapeString(grid.Shape), tensor.ShapeString(x.Shape), r)
		}
		if x.DType == tensor.String || x.DType == tensor.Bool {
			return nil, inputErrorf("GridSample does not take %v", x.DType)
		}
		out := append([]int{x.Shape[0], x.Shape[1]}, grid.Shape[1:r+1]...)
		total, err := tensor.NumElements(out)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		res := make([]float64, total)
		if total > 0 {
			for _, d := range x.Shape[2:] {
				if d == 0 {
					return nil, inputErrorf("GridSample cannot sample an empty image %s", tensor.ShapeString(x.Shape))
				}
			}
			gridSampleRun(x.Float64s(), x.Shape, grid.Float64s(), out, res, mode, padding, align)
		}
		y, err := castTo(&tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, x.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func gridSpatialName(spatial int) string {
	if spatial == 0 {
		return "one or more"
	}
	return fmt.Sprint(spatial)
}

// gridReflect reflects x off the borders lo and hi until it lies between
// them.
func gridReflect(x, lo, hi float64) float64 {
	rng := hi - lo
	if rng <= 0 {
		return lo
	}
	switch {
	case x < lo:
		dx := lo - x
		k := math.Floor(dx / rng)
		rem := dx - k*rng
		if int64(k)%2 == 0 {
			return lo + rem
		}
		return hi - rem
	case x > hi:
		dx := x - hi
		k := math.Floor(dx / rng)
		rem := dx - k*rng
		if int64(k)%2 == 0 {
			return hi - rem
		}
		return lo + rem
	}
	return x
}

// gridCubicCoeffs are Keys' cubic convolution weights (a = -0.75) of the
// four points around a sample at fraction t past the second.
func gridCubicCoeffs(t float64, c *[4]float64) {
	const a = -0.75
	x := t + 1
	c[0] = ((a*x-5*a)*x+8*a)*x - 4*a
	c[1] = ((a+2)*t-(a+3))*t*t + 1
	x = 1 - t
	c[2] = ((a+2)*x-(a+3))*x*x + 1
	x = 2 - t
	c[3] = ((a*x-5*a)*x+8*a)*x - 4*a
}

// gridSampleRun fills res (N, C, out spatial...) by sampling x at grid.
func gridSampleRun(x []float64, xShape []int, grid []float64, out []int, res []float64, mode int, padding string, align bool) {
	r := len(xShape) - 2
	nb, c := xShape[0], xShape[1]
	dims := xShape[2:]
	inPlane := 1
	for _, d := range dims {
		inPlane *= d
	}
	outPlane := 1
	for _, d := range out[2:] {
		outPlane *= d
	}
	st := tensor.Strides(dims)
	lo, hi := make([]float64, r), make([]float64, r)
	for i, d := range dims {
		if align {
			lo[i], hi[i] = 0, float64(d-1)
		} else {
			lo[i], hi[i] = -0.5, float64(d)-0.5
		}
	}
	ntaps := map[int]int{gridNearest: 1, gridLinear: 2, gridCubic: 4}[mode]
	// per spatial dimension: tap offsets (-1: zero) and weights
	tapOff := make([][]int, r)
	tapW := make([][]float64, r)
	for i := range tapOff {
		tapOff[i] = make([]int, ntaps)
		tapW[i] = make([]float64, ntaps)
	}
	index := func(i, d int) int { // the element index of integer position i, -1 for zero
		switch padding {
		case "zeros":
			if i < 0 || i >= dims[d] {
				return -1
			}
		case "border":
			i = min(max(i, 0), dims[d]-1)
		default:
			i = int(gridReflect(float64(i), lo[d], hi[d]))
			i = min(max(i, 0), dims[d]-1)
		}
		return i * st[d]
	}
	pos := make([]int, r)
	var cc [4]float64
	for b := 0; b < nb; b++ {
		for p := 0; p < outPlane; p++ {
			g := grid[(b*outPlane+p)*r:]
			for d := 0; d < r; d++ {
				v := g[r-1-d] // the grid lists the innermost dimension first
				var xd float64
				if align {
					xd = (v + 1) / 2 * float64(dims[d]-1)
				} else {
					xd = ((v+1)*float64(dims[d]) - 1) / 2
				}
				xd = float64(float32(xd))
				if mode == gridNearest {
					xd = math.RoundToEven(xd) // halves to even, as the node tests expect in 2-D and 3-D
				}
				if xd < lo[d] || xd > hi[d] {
					switch padding {
					case "border":
						xd = min(max(xd, 0), float64(dims[d]-1))
					case "reflection":
						xd = gridReflect(xd, lo[d], hi[d])
					}
				}
				switch mode {
				case gridNearest:
					tapOff[d][0], tapW[d][0] = index(int(xd), d), 1
				case gridLinear:
					f := math.Floor(xd)
					t := xd - f
					i0 := int(f)
					tapOff[d][0], tapW[d][0] = index(i0, d), 1-t
					tapOff[d][1], tapW[d][1] = index(i0+1, d), t
				case gridCubic:
					f := math.Floor(xd)
					i0 := int(f)
					gridCubicCoeffs(xd-f, &cc)
					for k := 0; k < 4; k++ {
						tapOff[d][k], tapW[d][k] = index(i0-1+k, d), cc[k]
					}
				}
			}
			for ch := 0; ch < c; ch++ {
				plane := x[(b*c+ch)*inPlane : (b*c+ch+1)*inPlane]
				// sum over the tensor product of the taps
				clear(pos)
				var sum float64
				for {
					off, w := 0, 1.0
					for d := 0; d < r; d++ {
						o := tapOff[d][pos[d]]
						if o < 0 {
							w = 0
							break
						}
						off += o
						w *= tapW[d][pos[d]]
					}
					if w != 0 {
						sum += w * plane[off]
					}
					d := r - 1
					for ; d >= 0; d-- {
						pos[d]++
						if pos[d] < ntaps {
							break
						}
						pos[d] = 0
					}
					if d < 0 {
						break
					}
				}
				res[(b*c+ch)*outPlane+p] = sum
			}
		}
	}
}

// ---- AffineGrid ----

func buildAffineGrid(n *node, at *AffineGridAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	align := at.AlignCorners
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		theta := in[0]
		size, err := in[1].Int64s()
		if err != nil || in[1].Rank() != 1 || (len(size) != 4 && len(size) != 5) {
			return nil, inputErrorf("AffineGrid size must be a 1-D integer tensor of 4 or 5 elements, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
		}
		if !theta.DType.IsFloat() {
			return nil, inputErrorf("AffineGrid theta must be floating point, got %v", theta.DType)
		}
		r := len(size) - 2
		if theta.Rank() != 3 || theta.Shape[1] != r || theta.Shape[2] != r+1 || int64(theta.Shape[0]) != size[0] {
			return nil, inputErrorf("AffineGrid theta %s does not fit size %v: want (%d, %d, %d)", tensor.ShapeString(theta.Shape), size, size[0], r, r+1)
		}
		out := []int{theta.Shape[0]}
		for _, d := range size[2:] {
			if d < 1 || d > tensor.MaxElements {
				return nil, inputErrorf("AffineGrid size %v has an invalid spatial dimension", size)
			}
			out = append(out, int(d))
		}
		out = append(out, r)
		total, err := tensor.NumElements(out)
		if err != nil {
			return nil, inputErrorf("%v", err)
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
		y, err := castTo(&tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, theta.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// ---- Col2Im ----

func buildCol2Im(n *node, at *Col2ImAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		image, err1 := in[1].Int64s()
		block, err2 := in[2].Int64s()
		if err1 != nil || err2 != nil || in[1].Rank() != 1 || in[2].Rank() != 1 || len(image) != len(block) || len(image) == 0 {
			return nil, inputErrorf("Col2Im image_shape and block_shape must be 1-D integer tensors of one length")
		}
		r := len(image)
		attr := func(v []int64, name string, def int64, want int) ([]int, error) {
			if v == nil {
				s := make([]int, want)
				for i := range s {
					s[i] = int(def)
				}
				return s, nil
			}
			if len(v) != want {
				return nil, inputErrorf("Col2Im %s has %d values, needs %d", name, len(v), want)
			}
			s := make([]int, want)
			for i, e := range v {
				if e < 0 || e > 1<<20 || (name != "pads" && e == 0) {
					return nil, inputErrorf("Col2Im %s %v is invalid", name, v)
				}
				s[i] = int(e)
			}
			return s, nil
		}
		dil, err := attr(at.Dilations, "dilations", 1, r)
		if err != nil {
			return nil, err
		}
		pads, err := attr(at.Pads, "pads", 0, 2*r)
		if err != nil {
			return nil, err
		}
		strides, err := attr(at.Strides, "strides", 1, r)
		if err != nil {
			return nil, err
		}
		img, blk := make([]int, r), make([]int, r)
		for i := range r {
			if image[i] < 1 || image[i] > tensor.MaxElements || block[i] < 1 || block[i] > tensor.MaxElements {
				return nil, inputErrorf("Col2Im image_shape %v or block_shape %v is invalid", image, block)
			}
			img[i], blk[i] = int(image[i]), int(block[i])
		}
		if x.Rank() != 3 {
			return nil, inputErrorf("Col2Im takes an (N, C·∏block, L) input, got %s", tensor.ShapeString(x.Shape))
		}
		k, err := tensor.NumElements(blk)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if x.Shape[1]%k != 0 {
			return nil, inputErrorf("Col2Im: input dimension 1 (%d) is not a multiple of the block size %d", x.Shape[1], k)
		}
		cols := make([]int, r) // sliding blocks per dimension
		for i := range r {
			cols[i] = (img[i]+pads[i]+pads[i+r]-dil[i]*(blk[i]-1)-1)/strides[i] + 1
			if cols[i] < 1 {
				return nil, inputErrorf("Col2Im: no block fits dimension %d", i)
			}
		}
		l, err := tensor.NumElements(cols)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if x.Shape[2] != l {
			return nil, inputErrorf("Col2Im: input has %d blocks, image_shape and block_shape give %d", x.Shape[2], l)
		}
		nb, c := x.Shape[0], x.Shape[1]/k
		out := append([]int{nb, c}, img...)
		total, err := tensor.NumElements(out)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if x.DType == tensor.String || x.DType == tensor.Bool {
			return nil, inputErrorf("Col2Im does not take %v", x.DType)
		}
		xs := x.Float64s()
		res := make([]float64, total)
		plane := total / max(nb*c, 1)
		imgSt := tensor.Strides(img)
		kIdx, bIdx := make([]int, r), make([]int, r)
		for b := 0; b < nb; b++ {
			for ch := 0; ch < c; ch++ {
				dst := res[(b*c+ch)*plane : (b*c+ch+1)*plane]
				clear(kIdx)
				for kk := 0; kk < k; kk++ {
					clear(bIdx)
					src := xs[((b*c+ch)*k+kk)*l:]
					for j := 0; j < l; j++ {
						off, ok := 0, true
						for d := 0; d < r; d++ {
							p := bIdx[d]*strides[d] - pads[d] + kIdx[d]*dil[d]
							if p < 0 || p >= img[d] {
								ok = false
								break
							}
							off += p * imgSt[d]
						}
						if ok {
							dst[off] += src[j]
						}
						geomNext(bIdx, cols)
					}
					geomNext(kIdx, blk)
				}
			}
		}
		y, err := castTo(&tensor.Tensor{DType: tensor.Float64, Shape: out, Data: res}, x.DType)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// geomNext advances a row-major multi-index over shape, wrapping to zero.
func geomNext(idx, shape []int) {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < shape[d] {
			return
		}
		idx[d] = 0
	}
}
