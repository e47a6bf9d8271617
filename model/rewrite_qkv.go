package model

import (
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// The "qkv" rewrite runs the three projections of a self-attention block
// as one product, as encoders export them (after the "linear" and
// "attention" rules):
//
//	Q = Linear(X, Wq, bq)   K = Linear(X, Wk, bk)   V = Linear(X, Wv, bv)
//	Y = Attention(Q, K, V)
//
// becomes
//
//	QKV = Linear(X, [Wq Wk Wv], [bq bk bv])
//	Y   = Attention(QKV)   (packed: Q, K and V its three column blocks)
//
// X's rows are read (and, with int8 weights, quantized) once instead of
// three times, and the product is one step of three times the columns,
// which splits across cores better than each of three does (cmd/bench
// qgemm on two cores of a Zen 5: 128×256×256 1.24x its one-core rate,
// 128×256×768 1.61x). Every value is the same: each column of the
// product is the sum it was, with its own weight column's scale, its
// bias and no activation, and the attention reads the blocks by their
// row stride. Weights must be float32 initializers of the same K and the
// attention's width, each projection a product and its bias read by the
// attention alone. With int8 weights the scheme must scale each column
// (per_channel) or each block of a column (per_block): one scale for the
// three weights together (per_tensor) is not each one's own. Nor may the
// packed weight reach ops.MinQuantizedWeights where each alone did not:
// it would run int8 where the three ran float32.

func init() {
	registerRewrite("qkv", eachNode((*rewriter).fuseQKV))
}

// fuseQKV packs the projections of attention node a, when they match,
// and reports whether it did.
func (r *rewriter) fuseQKV(a *onnxpb.Node) bool {
	if r.dead[a] || a.OpType != "Attention" || normDomain(a.Domain) != rewriteDomain || len(a.Inputs) != 3 || attrOf(a, "packed") != nil {
		return false
	}
	width := int(fusedAttrInt(a, "num_heads") * fusedAttrInt(a, "head_size"))
	var proj [3]*onnxpb.Node
	var ws, bs [3]*tensor.Tensor
	for i, v := range a.Inputs {
		p := r.prod[v]
		if v == "" || r.used[v] != 1 || p == nil || r.dead[p] || p.OpType != "Linear" || normDomain(p.Domain) != rewriteDomain ||
			len(p.Inputs) < 2 || len(p.Inputs) > 3 || len(p.Outputs) != 1 || r.keep[p.Name] || !plainLinear(p) {
			return false
		}
		if w := r.inits[p.Inputs[1]]; w == nil || w.DataType != onnxpb.Float {
			return false
		}
		if ws[i] = r.constant(p.Inputs[1]); ws[i] == nil || ws[i].Rank() != 2 || ws[i].Shape[1] != width {
			return false
		}
		if len(p.Inputs) == 3 {
			if !r.linearBias(p.Inputs[2], p.Inputs[1]) {
				return false
			}
			if bs[i] = r.constant(p.Inputs[2]); bs[i] == nil {
				return false
			}
		}
		proj[i] = p
	}
	for i, p := range proj[1:] {
		if p.Inputs[0] != proj[0].Inputs[0] || len(p.Inputs) != len(proj[0].Inputs) ||
			fusedAttrInt(p, "opset") != fusedAttrInt(proj[0], "opset") || ws[1+i].Shape[0] != ws[0].Shape[0] {
			return false
		}
	}
	k := ws[0].Shape[0]
	if r.quantize && (r.scheme != quant.PerChannel && r.scheme != quant.PerBlock ||
		k*width < ops.MinQuantizedWeights && 3*k*width >= ops.MinQuantizedWeights) {
		return false
	}
	w := make([]float32, k*3*width)
	for row := range k {
		for i, wi := range ws {
			copy(w[(row*3+i)*width:], wi.Data.([]float32)[row*width:(row+1)*width])
		}
	}
	inputs := []string{proj[0].Inputs[0], r.addConstant(proj[0].Inputs[1], tensor.From([]int{k, 3 * width}, w))}
	if bs[0] != nil {
		b := make([]float32, 0, 3*width)
		for _, bi := range bs {
			b = append(b, bi.Data.([]float32)...)
		}
		inputs = append(inputs, r.addConstant(proj[0].Inputs[2], tensor.From([]int{3 * width}, b)))
	}
	// The packed product takes the place of the first projection: X is
	// computed by then, and the attention comes after all three.
	first := slices.IndexFunc(r.g.Nodes, func(n *onnxpb.Node) bool { return slices.Contains(proj[:], n) })
	// The packed value's name is Q's with a suffix, the same at every
	// load (a layer's calibrated range is keyed by it).
	packed := a.Inputs[0] + "/qkv"
	if r.taken(packed) {
		packed = r.fresh(packed)
	}
	fused := &onnxpb.Node{Name: proj[0].Name, OpType: "Linear", Domain: rewriteDomain, Inputs: inputs, Outputs: []string{packed},
		Attributes: slices.Clone(proj[0].Attributes)}
	attn := *a
	attn.Inputs = []string{packed}
	attn.Attributes = append(slices.Clone(a.Attributes), &onnxpb.Attribute{Name: "packed", Type: onnxpb.AttrInt, I: 1})
	r.g.Nodes[slices.Index(r.g.Nodes, a)] = &attn
	r.replace(r.g.Nodes[first], fused, proj[:])
	return true
}

// plainLinear reports whether Linear node p is a product and its bias
// alone: no activation, no residual, not a Gemm's product.
func plainLinear(p *onnxpb.Node) bool {
	for _, at := range p.Attributes {
		if at.Name != "opset" && (at.Name != "activation" || len(at.S) != 0) {
			return false
		}
	}
	return true
}
