package model

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "layernorm" rewrite runs layer normalization spelled out, as
// exporters write nn.LayerNorm below opset 17 (BERT's, GPT-2's), as one
// LayerNormalization over the last axis: the operator's row kernel in
// one pass where the graph as written makes nine, two of them
// reductions.
//
//	m = ReduceMean(x, axes=[-1])          keepdims, axes as an attribute
//	d = Sub(x, m)                         or (opset 18) a constant input
//	v = ReduceMean(Pow(d, 2), axes=[-1])  or Mul(d, d)
//	n = Div(d, Sqrt(Add(v, eps)))         eps a float32 scalar constant
//	y = Add(Mul(n, gamma), beta)          gamma, beta float32 vectors,
//	                                      constants; the Add optional
//
// Every value between x and y is read by the pattern alone (d by its two
// readers). The node is quantserve.LayerNormalization (the operator,
// registered in the rewrite domain for models of any opset).

func init() {
	registerRewrite("layernorm", eachNode((*rewriter).fuseLayerNorm))
}

// fuseLayerNorm replaces the spelled-out layer normalization whose first
// node is mean, if it is one, and reports whether it did.
func (r *rewriter) fuseLayerNorm(mean *onnxpb.Node) bool {
	if !r.lastAxisMean(mean) {
		return false
	}
	x := mean.Inputs[0]
	sub := r.readBy(mean.Outputs[0], "Sub")
	if sub == nil || len(sub.Inputs) != 2 || sub.Inputs[0] != x || sub.Inputs[1] != mean.Outputs[0] {
		return false
	}
	d := sub.Outputs[0]
	readers := r.readers(d)
	if len(readers) != 2 {
		return false
	}
	var sq, div *onnxpb.Node
	for _, n := range readers {
		switch {
		case r.is(n, "Div") && len(n.Inputs) == 2 && n.Inputs[0] == d:
			div = n
		case r.is(n, "Pow") && len(n.Inputs) == 2 && n.Inputs[0] == d && r.scalarNear(n.Inputs[1], 2),
			r.is(n, "Mul") && len(n.Inputs) == 2 && n.Inputs[0] == d && n.Inputs[1] == d:
			sq = n
		}
	}
	if sq == nil || div == nil || len(sq.Outputs) != 1 || len(div.Outputs) != 1 {
		return false
	}
	reads := 2
	if sq.OpType == "Mul" {
		reads = 3 // Mul(d, d) reads d twice
	}
	if r.used[d] != reads {
		return false // d read elsewhere too
	}
	variance := r.readBy(sq.Outputs[0], "ReduceMean")
	if variance == nil || !r.lastAxisMean(variance) {
		return false
	}
	add, sqrt, eps, ok := r.rootOfMean(variance)
	if !ok || r.onlyReader(sqrt.Outputs[0]) != div || div.Inputs[1] != sqrt.Outputs[0] {
		return false
	}
	scale := r.readBy(div.Outputs[0], "Mul")
	if scale == nil || len(scale.Inputs) != 2 {
		return false
	}
	gamma := otherInput(scale, div.Outputs[0])
	if !r.vectorConst(gamma) {
		return false
	}
	last, inputs := scale, []string{x, gamma}
	if shift := r.readBy(scale.Outputs[0], "Add"); shift != nil && len(shift.Inputs) == 2 {
		if beta := otherInput(shift, scale.Outputs[0]); r.vectorConst(beta) && r.inits[beta].Dims[0] == r.inits[gamma].Dims[0] {
			last, inputs = shift, append(inputs, beta)
		}
	}
	fused := &onnxpb.Node{
		Name: last.Name, OpType: "LayerNormalization", Domain: rewriteDomain,
		Inputs: inputs, Outputs: []string{last.Outputs[0]},
		Attributes: []*onnxpb.Attribute{
			{Name: "axis", Type: onnxpb.AttrInt, I: -1},
			{Name: "epsilon", Type: onnxpb.AttrFloat, F: eps},
		},
	}
	// x, gamma and beta are there before the pattern's first node
	r.replace(last, fused, []*onnxpb.Node{mean, sub, sq, variance, add, sqrt, div, scale})
	return true
}

// lastAxisMean reports whether n is a ReduceMean of one input over the
// last axis alone (axes [-1], as an attribute or, from opset 18, a
// constant input), keeping it.
func (r *rewriter) lastAxisMean(n *onnxpb.Node) bool {
	if !r.is(n, "ReduceMean") || len(n.Inputs) == 0 || len(n.Outputs) != 1 || n.Inputs[0] == "" {
		return false
	}
	axes := []int64(nil)
	for _, a := range n.Attributes {
		switch {
		case a.Name == "axes":
			axes = a.Ints
		case a.Name == "keepdims" && a.I == 1, a.Name == "noop_with_empty_axes" && a.I == 0:
		default:
			return false
		}
	}
	switch {
	case len(n.Inputs) == 2 && axes == nil:
		axes, _ = r.ints(n.Inputs[1])
	case len(n.Inputs) != 1:
		return false
	}
	return slices.Equal(axes, []int64{-1})
}

// rootOfMean matches Sqrt(Add(mean, eps)) after the ReduceMean mean, each
// read by the next alone, eps a finite float32 scalar constant >= 0, and
// returns the Add, the Sqrt and eps.
func (r *rewriter) rootOfMean(mean *onnxpb.Node) (add, sqrt *onnxpb.Node, eps float32, ok bool) {
	add = r.readBy(mean.Outputs[0], "Add")
	if add == nil || len(add.Inputs) != 2 {
		return nil, nil, 0, false
	}
	eps, ok = r.constScalar(otherInput(add, mean.Outputs[0]), 1)
	if !ok || !(eps >= 0) || math.IsInf(float64(eps), 0) {
		return nil, nil, 0, false
	}
	sqrt = r.readBy(add.Outputs[0], "Sqrt")
	if sqrt == nil || len(sqrt.Inputs) != 1 {
		return nil, nil, 0, false
	}
	return add, sqrt, eps, true
}

// readBy returns the ai.onnx node of type typ, of one output, that alone
// reads value v (once), or nil.
func (r *rewriter) readBy(v, typ string) *onnxpb.Node {
	if n := r.onlyReader(v); r.is(n, typ) && len(n.Outputs) == 1 {
		return n
	}
	return nil
}

// readers returns the live nodes reading value v, each once.
func (r *rewriter) readers(v string) []*onnxpb.Node {
	var out []*onnxpb.Node
	for _, n := range r.g.Nodes {
		if !r.dead[n] && slices.Contains(n.Inputs, v) {
			out = append(out, n)
		}
	}
	return out
}

// vectorConst reports whether v is a float32 initializer of rank 1.
func (r *rewriter) vectorConst(v string) bool {
	p := r.inits[v]
	return v != "" && p != nil && !p.External && p.DataType == onnxpb.Float && len(p.Dims) == 1
}

// The "rmsnorm" rewrite runs root-mean-square normalization spelled out,
// as exporters write LLaMA's and T5's below opset 23, as one
// RMSNormalization over the last axis (quantserve.RMSNormalization, the
// operator registered in the rewrite domain):
//
//	v = ReduceMean(Pow(x, 2), axes=[-1])   or Mul(x, x)
//	s = Sqrt(Add(v, eps))
//	y = Mul(gamma, Mul(x, Reciprocal(s)))  or Div(x, s), or Div(1, s)
//	                                       for the reciprocal; either
//	                                       order of each product
//
// gamma a float32 vector constant; every value between x and y read by
// the pattern alone (x itself by anything).

func init() {
	registerRewrite("rmsnorm", eachNode((*rewriter).fuseRMSNorm))
}

// fuseRMSNorm replaces the spelled-out RMS normalization whose square is
// sq, if it is one, and reports whether it did.
func (r *rewriter) fuseRMSNorm(sq *onnxpb.Node) bool {
	if len(sq.Inputs) != 2 || len(sq.Outputs) != 1 {
		return false
	}
	x := sq.Inputs[0]
	if !(r.is(sq, "Pow") && r.scalarNear(sq.Inputs[1], 2) || r.is(sq, "Mul") && sq.Inputs[1] == x) {
		return false
	}
	mean := r.readBy(sq.Outputs[0], "ReduceMean")
	if mean == nil || !r.lastAxisMean(mean) {
		return false
	}
	add, sqrt, eps, ok := r.rootOfMean(mean)
	if !ok {
		return false
	}
	nodes := []*onnxpb.Node{sq, mean, add, sqrt}
	// x/s, or x·(1/s) with 1/s as Reciprocal(s) or Div(1, s)
	normed := r.readBy(sqrt.Outputs[0], "Div")
	switch {
	case normed != nil && len(normed.Inputs) == 2 && normed.Inputs[0] == x && normed.Inputs[1] == sqrt.Outputs[0]:
		nodes = append(nodes, normed)
	default:
		inv := r.readBy(sqrt.Outputs[0], "Reciprocal")
		if inv == nil && normed != nil && len(normed.Inputs) == 2 && normed.Inputs[1] == sqrt.Outputs[0] && r.scalarNear(normed.Inputs[0], 1) {
			inv = normed
		}
		if inv == nil {
			return false
		}
		normed = r.readBy(inv.Outputs[0], "Mul")
		if normed == nil || len(normed.Inputs) != 2 || otherInput(normed, inv.Outputs[0]) != x {
			return false
		}
		nodes = append(nodes, inv, normed)
	}
	scale := r.readBy(normed.Outputs[0], "Mul")
	if scale == nil || len(scale.Inputs) != 2 {
		return false
	}
	gamma := otherInput(scale, normed.Outputs[0])
	if !r.vectorConst(gamma) {
		return false
	}
	fused := &onnxpb.Node{
		Name: scale.Name, OpType: "RMSNormalization", Domain: rewriteDomain,
		Inputs: []string{x, gamma}, Outputs: []string{scale.Outputs[0]},
		Attributes: []*onnxpb.Attribute{
			{Name: "axis", Type: onnxpb.AttrInt, I: -1},
			{Name: "epsilon", Type: onnxpb.AttrFloat, F: eps},
		},
	}
	r.replace(scale, fused, nodes) // x and gamma are there before the square
	return true
}
