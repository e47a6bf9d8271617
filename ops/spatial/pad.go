package spatial

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Pad is the Pad operator, by opset range.
var Pad = ops.Op{
	ops.Register(ops.Descriptor{Type: "Pad", Since: 2, Until: 10, Fold: true}, buildPad2),
	ops.Register(ops.Descriptor{Type: "Pad", Since: 11, Fold: true}, buildPad11),
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

// padModeValid checks Pad's mode; wrap is valid from opset 19.
func padModeValid(mode string, opset int64) error {
	switch mode {
	case "constant", "reflect", "edge":
		return nil
	case "wrap":
		if opset >= 19 {
			return nil
		}
	}
	return ops.Unsupportedf("Pad mode %q at opset %d", mode, opset)
}

// padSource resolves Pad along every axis of shape: pads holds the begin
// then the end amounts of each axis (negative amounts crop). It returns the
// output shape and, per axis, the input index each output index reads (-1
// for the constant). Cropping applies first; reflect, edge and wrap then
// extend what is left, reflecting and wrapping as often as the pads need.
func padSource(shape []int, mode string, pads []int64) ([]int, [][]int, error) {
	return padSourceFor(nil, shape, mode, pads)
}

// padSourceFor is padSource reserving the maps from c (nil: none) before
// it makes them: an axis may be long though the input is small.
func padSourceFor(c *ops.Context, shape []int, mode string, pads []int64) ([]int, [][]int, error) {
	r := len(shape)
	if len(pads) != 2*r {
		return nil, nil, ops.InputErrorf("Pad has %d pads for a rank-%d input, needs %d", len(pads), r, 2*r)
	}
	out := make([]int, r)
	kept := make([][2]int, r) // per axis, the part of the input kept, before padding
	for d, dim := range shape {
		b, e := pads[d], pads[d+r]
		if b < -int64(dim) || e < -int64(dim) || b > tensor.MaxElements || e > tensor.MaxElements {
			return nil, nil, ops.InputErrorf("Pad pads %d, %d do not fit axis %d of size %d", b, e, d, dim)
		}
		lo, hi := max(-int(b), 0), dim-max(-int(e), 0)
		if hi < lo {
			return nil, nil, ops.InputErrorf("Pad pads %d, %d crop more than axis %d has (%d)", b, e, d, dim)
		}
		size := dim + int(b) + int(e)
		if size < 0 || size > tensor.MaxElements {
			return nil, nil, ops.InputErrorf("Pad pads %d, %d give axis %d size %d", b, e, d, size)
		}
		if hi == lo && size > 0 && mode != "constant" {
			return nil, nil, ops.InputErrorf("Pad cannot %s-pad axis %d: nothing is left of it", mode, d)
		}
		out[d], kept[d] = size, [2]int{lo, hi}
	}
	total, err := tensor.NumElements(out)
	if err != nil {
		return nil, nil, ops.InputErrorf("Pad output %v: %v", out, err)
	}
	src := make([][]int, r)
	if total == 0 {
		return out, src, nil // nothing to read; no maps (an axis may be long)
	}
	var maps int64
	for _, n := range out {
		maps += 8 * int64(n)
	}
	if err := c.Reserve(maps); err != nil {
		return nil, nil, err
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

// PadMap resolves a compiled Pad node on its inputs, given its op type,
// parsed attributes (a *PadAttrs or *Pad11Attrs) and opset: the output
// shape and, per axis, the input index each output index reads, -1 where
// the output holds the constant (no maps when the output is empty). The
// gradient of Pad sums dY back along it.
func PadMap(op string, params any, opset int64, in []*tensor.Tensor) ([]int, [][]int, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, nil, fmt.Errorf("Pad has no input")
	}
	switch at := params.(type) {
	case *PadAttrs:
		return padSource(in[0].Shape, at.Mode, at.Pads)
	case *Pad11Attrs:
		pads, err := padInputs(in, opset)
		if err != nil {
			return nil, nil, err
		}
		return padSource(in[0].Shape, at.Mode, pads)
	}
	return nil, nil, fmt.Errorf("model: PadMap of a %s node", op)
}

// pad2 is a compiled Pad before opset 11: its mode, pads and constant.
type pad2 struct {
	mode  string
	pads  []int64
	value *tensor.Tensor
}

func buildPad2(n *ops.Node, at *PadAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := padModeValid(at.Mode, n.Opset); err != nil {
		return nil, err
	}
	if at.Pads == nil {
		return nil, fmt.Errorf("Pad needs the pads attribute")
	}
	return &pad2{mode: at.Mode, pads: slices.Clone(at.Pads), value: tensor.Scalar(at.Value)}, nil
}

func (p *pad2) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	out, src, err := padSourceFor(c, x.Shape, p.mode, p.pads)
	if err != nil {
		return nil, err
	}
	fill, err := scalarAs(p.value, x.DType)
	if err != nil {
		return nil, err
	}
	y, err := gather(c, x, out, src, fill)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// padInputs returns the begin-then-end pads for every axis of in[0] from
// Pad's pads and (opset 18 on) axes inputs.
func padInputs(in []*tensor.Tensor, opset int64) ([]int64, error) {
	x := in[0]
	if len(in) < 2 || in[1] == nil {
		return nil, ops.InputErrorf("Pad needs its pads input")
	}
	pads, err := in[1].Int64s()
	if err != nil || in[1].Rank() > 1 {
		return nil, ops.InputErrorf("Pad pads must be a 1-D integer tensor, got %v%s", in[1].DType, tensor.ShapeString(in[1].Shape))
	}
	if len(in) < 4 || in[3] == nil {
		return pads, nil
	}
	if opset < 18 {
		return nil, ops.InputErrorf("Pad takes an axes input from opset 18 on")
	}
	axes, err := in[3].Int64s()
	if err != nil || in[3].Rank() > 1 {
		return nil, ops.InputErrorf("Pad axes must be a 1-D integer tensor, got %v%s", in[3].DType, tensor.ShapeString(in[3].Shape))
	}
	r := x.Rank()
	if len(pads) != 2*len(axes) {
		return nil, ops.InputErrorf("Pad has %d pads for %d axes, needs %d", len(pads), len(axes), 2*len(axes))
	}
	full := make([]int64, 2*r)
	seen := make([]bool, r)
	for i, ax := range axes {
		a, err := ops.NormAxis(ax, r)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, ops.InputErrorf("Pad axes %v repeat axis %d", axes, a)
		}
		seen[a] = true
		full[a], full[a+r] = pads[i], pads[i+len(axes)]
	}
	return full, nil
}

// pad11 is a compiled Pad from opset 11 on: its mode, and the opset that
// says whether it takes axes.
type pad11 struct {
	mode  string
	opset int64
}

func buildPad11(n *ops.Node, at *Pad11Attrs) (ops.Operator, error) {
	maxIn := 3
	if n.Opset >= 18 {
		maxIn = 4
	}
	if err := n.CheckArity(2, maxIn, 1, 1); err != nil {
		return nil, err
	}
	if err := padModeValid(at.Mode, n.Opset); err != nil {
		return nil, err
	}
	return &pad11{mode: at.Mode, opset: n.Opset}, nil
}

func (p *pad11) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	pads, err := padInputs(in, p.opset)
	if err != nil {
		return nil, err
	}
	out, src, err := padSourceFor(c, x.Shape, p.mode, pads)
	if err != nil {
		return nil, err
	}
	var fill *tensor.Tensor
	if len(in) > 2 && in[2] != nil && in[2].Len() > 0 {
		if in[2].DType != x.DType || in[2].Len() != 1 {
			return nil, ops.InputErrorf("Pad constant_value must be one %v, got %v%s", x.DType, in[2].DType, tensor.ShapeString(in[2].Shape))
		}
		fill = in[2]
	}
	y, err := gather(c, x, out, src, fill)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}
