package model

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "qdq-grid" rewrite removes a QuantizeDequantize whose input already
// lies on its grid, which static QDQ quantizers write after a MaxPool
// (ONNX Runtime's quantize_static gives the pool's output its input's
// scale):
//
//	a = QDQ(x)   m = MaxPool(a)   y = QDQ(m)   (the same constants)
//
// A pair y = float32(q − dz)·ds with qs = ds and qz = dz gives back every
// value of its own grid: for such a value v = float32(k·ds), k an integer
// in the type's range shifted by dz, v/qs is within k·2^-23 of k, so it
// rounds to k, which the bounds keep. A max pool whose every window holds
// at least one element of its input outputs values of that input (no
// padding value, no NaN: the first pair has none), so the second pair is
// an identity on it and y is m. Removing it lets the pool (and the
// convolution before it) keep a channels-last layout, and saves a pass.
func init() {
	registerRewrite("qdq-grid", func(r *rewriter) bool {
		outputs := map[string]bool{}
		for _, o := range r.g.Outputs {
			outputs[o.Name] = true
		}
		changed := false
		for _, n := range r.g.Nodes {
			p, ok := qdqPairOf(r, n)
			if !ok || outputs[n.Outputs[0]] || p.qs != p.ds || p.qz != p.dz || !p.keeps(r.gridOf(n.Inputs[0])) {
				continue
			}
			r.rewire(n.Outputs[0], n.Inputs[0])
			r.remove(n)
			changed = true
		}
		return changed
	})
}

// keeps reports whether p, a pair with qs = ds and qz = dz, is an identity
// on the values of grid (the outputs of a pair; ok false: not known).
func (p qdqPair) keeps(grid qdqPair, ok bool) bool {
	// A positive, finite scale: a scale of 0 (or NaN) makes 0/0, and a
	// negative one grid values of either zero's sign.
	return ok && grid.ds > 0 && grid.ds <= math.MaxFloat32 && grid.ds == p.ds && grid.dz == p.dz && grid.typ == p.typ
}

// gridOf returns the pair whose outputs value v is made of: v is the
// output of a QuantizeDequantize or of a fused convolution whose last
// stage is a pair (qdq_*), or of a chain of operators that output values
// of their first input (a 2-D MaxPool whose every window overlaps its
// input, ONNX's or its channels-last form; the shape operators) from
// such a value. ok is false otherwise.
func (r *rewriter) gridOf(v string) (grid qdqPair, ok bool) {
	n := r.prod[v]
	for n != nil && !r.dead[n] && len(n.Inputs) > 0 && n.Inputs[0] != "" && (r.movesValues(n) || isMaxPool2D(n) &&
		(normDomain(n.Domain) == rewriteDomain || maxPoolAttrsKnown(n, r.opset(n))) && maxPoolWindowsInside(n)) {
		n = r.prod[n.Inputs[0]]
	}
	if n != nil && !r.dead[n] && isFusedConv(n) && len(n.Outputs) == 1 {
		return fusedConvPair(n, "")
	}
	return qdqPairOf(r, n)
}

// fusedConvPair returns the pair a fused convolution applies as prefix
// names it ("": last, to its output; "input_": to its input).
func fusedConvPair(n *onnxpb.Node, prefix string) (qdqPair, bool) {
	s, z, typ := attrOf(n, prefix+"qdq_scales"), attrOf(n, prefix+"qdq_zero_points"), attrOf(n, prefix+"qdq_type")
	if s == nil || z == nil || typ == nil || len(s.Floats) != 2 || len(z.Ints) != 2 {
		return qdqPair{}, false
	}
	p := qdqPair{qs: s.Floats[0], ds: s.Floats[1], qz: z.Ints[0], dz: z.Ints[1], typ: string(typ.S)}
	return p, p.typ == "uint8" || p.typ == "int8"
}

// The "qdq-input-grid" rewrite tells a fused convolution the grid its
// input lies on (grid_*, see conv.FusedConv): its own input pair's, or
// that of the pair whose outputs the input is (gridOf), as a static QDQ
// file's convolution reads the DequantizeLinear of the QuantizeLinear
// after the layer before. Its int8 product then multiplies the pair's
// bytes, as ONNX Runtime's QLinearConv does, where it would quantize
// the pair's values again, row by row. An input with a channel scale
// (and no input pair after it) lies on no grid.
func init() {
	registerRewrite("qdq-input-grid", eachNode((*rewriter).gridInput))
}

func (r *rewriter) gridInput(c *onnxpb.Node) bool {
	if r.dead[c] || !isFusedConv(c) || attrOf(c, "grid_scale") != nil || len(c.Inputs) == 0 || c.Inputs[fusedX] == "" {
		return false
	}
	var p qdqPair
	var ok bool
	switch {
	case attrOf(c, "input_qdq_scales") != nil:
		p, ok = fusedConvPair(c, "input_")
	case len(c.Inputs) > fusedXScale && c.Inputs[fusedXScale] != "":
		return false
	default:
		p, ok = r.gridOf(c.Inputs[fusedX])
	}
	if !ok || !(p.ds > 0 && p.ds <= math.MaxFloat32) {
		return false
	}
	n := *c
	n.Attributes = append(slices.Clone(c.Attributes),
		&onnxpb.Attribute{Name: "grid_scale", Type: onnxpb.AttrFloats, Floats: []float32{p.ds}},
		&onnxpb.Attribute{Name: "grid_zero_point", Type: onnxpb.AttrInts, Ints: []int64{p.dz}},
		&onnxpb.Attribute{Name: "grid_type", Type: onnxpb.AttrString, S: []byte(p.typ)})
	r.g.Nodes[slices.Index(r.g.Nodes, c)] = &n
	return true
}

// movesValues reports whether n's one output holds values of its first
// input only, moved or reshaped: a classifier's Flatten or Reshape of its
// pooled features, which quantize_static gives the pool's pair again.
func (r *rewriter) movesValues(n *onnxpb.Node) bool {
	switch {
	case len(n.Outputs) != 1:
		return false
	case r.is(n, "Reshape"), r.is(n, "Flatten"), r.is(n, "Squeeze"), r.is(n, "Unsqueeze"), r.is(n, "Transpose"), r.is(n, "Identity"):
		return true
	}
	return false
}

// maxPoolWindowsInside reports whether every window of MaxPool n holds an
// element of its input: explicit pads shorter than the window, no
// dilation, no ceil mode. Then the first window starts at -pad > -kernel,
// and the last (floor mode) at most at size + pad_end − kernel <= size −
// 1, so each overlaps the input.
func maxPoolWindowsInside(n *onnxpb.Node) bool {
	k := attrOf(n, "kernel_shape")
	if k == nil {
		return false
	}
	for _, a := range n.Attributes {
		switch a.Name {
		case "kernel_shape", "strides", "storage_order":
		case "auto_pad":
			if s := string(a.S); s != "NOTSET" && s != "VALID" {
				return false
			}
		case "ceil_mode":
			if a.I != 0 {
				return false
			}
		case "nchw_out": // the channels-last form's layout
		case "dilations":
			for _, d := range a.Ints {
				if d != 1 {
					return false
				}
			}
		case "pads":
			if len(a.Ints) != 2*len(k.Ints) {
				return false
			}
			for i, p := range a.Ints {
				if p < 0 || p >= k.Ints[i%len(k.Ints)] {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}
