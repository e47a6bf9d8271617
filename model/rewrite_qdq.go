package model

import (
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The "qdq" rewrite runs each activation's QuantizeLinear ->
// DequantizeLinear pair, what static QDQ quantizers (ONNX Runtime's
// quantize_static among them) write after every quantized activation, as
// one quantserve.QuantizeDequantize (package ops/matmul): one pass over
// the float32 values instead of two, and no integer tensor in between.
//
//	q = QuantizeLinear(x, qs, qz)      qs an FP32 scalar constant, qz an INT8
//	                                   or UINT8 scalar constant or absent
//	y = DequantizeLinear(q, ds, dz)    the same, dz of qz's type
//
// Every reader of q must be such a DequantizeLinear (each becomes one
// node), and q no graph output; x is any value but a constant (a pair of
// constants folds at load). The node computes what the pair did, bit for
// bit. The products around it are left to the other rules; the
// "qdq-weights" rule below folds the convolutions' weight and bias
// DequantizeLinears so that the convolution rules see constants.

func init() {
	registerRewrite("qdq", func(r *rewriter) bool {
		changed := false
		for _, q := range slices.Clone(r.g.Nodes) {
			if r.fuseQDQ(q) {
				changed = true
			}
		}
		return changed
	})
}

// qdqScalar reports whether p is a one-value constant of one of types.
func qdqScalar(p *onnxpb.Tensor, types ...onnxpb.DataType) bool {
	if p == nil || p.External || len(p.Dims) > 1 || len(p.Dims) == 1 && p.Dims[0] != 1 {
		return false
	}
	return slices.Contains(types, p.DataType)
}

// fuseQDQ replaces QuantizeLinear q and the DequantizeLinears reading it,
// when they match, and reports whether it did.
func (r *rewriter) fuseQDQ(q *onnxpb.Node) bool {
	if !r.is(q, "QuantizeLinear") || len(q.Inputs) < 2 || len(q.Inputs) > 3 || len(q.Outputs) != 1 || q.Outputs[0] == "" {
		return false
	}
	x, qs := q.Inputs[0], q.Inputs[1]
	if x == "" || r.inits[x] != nil || r.is(r.prod[x], "Constant") || !qdqScalar(r.inits[qs], onnxpb.Float) {
		return false
	}
	zt := onnxpb.Uint8
	qz := ""
	if len(q.Inputs) == 3 && q.Inputs[2] != "" {
		qz = q.Inputs[2]
		if !qdqScalar(r.inits[qz], onnxpb.Uint8, onnxpb.Int8) {
			return false
		}
		zt = r.inits[qz].DataType
	}
	for _, a := range q.Attributes {
		switch {
		case a.Name == "axis": // a scalar scale has no axis
		case a.Name == "saturate" && a.I == 1:
		case a.Name == "output_dtype" && a.I == int64(zt):
		default:
			return false
		}
	}
	qo := q.Outputs[0]
	for _, o := range r.g.Outputs {
		if o.Name == qo {
			return false
		}
	}
	var dqs []*onnxpb.Node
	for _, n := range r.g.Nodes {
		if r.dead[n] || !slices.Contains(n.Inputs, qo) {
			continue
		}
		if !r.is(n, "DequantizeLinear") || len(n.Inputs) < 2 || len(n.Inputs) > 3 || n.Inputs[0] != qo || len(n.Outputs) != 1 ||
			n.Outputs[0] == "" || !qdqScalar(r.inits[n.Inputs[1]], onnxpb.Float) {
			return false
		}
		if len(n.Inputs) == 3 && n.Inputs[2] != "" && !qdqScalar(r.inits[n.Inputs[2]], zt) {
			return false
		}
		for _, a := range n.Attributes {
			if a.Name != "axis" && !(a.Name == "output_dtype" && a.I == int64(onnxpb.Float)) {
				return false
			}
		}
		dqs = append(dqs, n)
	}
	if len(dqs) == 0 || len(dqs) != r.used[qo] {
		return false
	}

	for _, d := range dqs {
		dz := ""
		if len(d.Inputs) == 3 {
			dz = d.Inputs[2]
		}
		fused := &onnxpb.Node{Name: d.Name, OpType: "QuantizeDequantize", Domain: rewriteDomain,
			Inputs: []string{x, qs, qz, d.Inputs[1], dz}, Outputs: []string{d.Outputs[0]}}
		r.g.Nodes[slices.Index(r.g.Nodes, d)] = fused
	}
	r.remove(q)
	r.useDomain()
	return true
}

// The "qdq-weights" rewrite folds a DequantizeLinear of constants that
// only convolutions read (a static QDQ file's Conv weights and biases)
// into the float32 constant it computes, as the compiler would fold it,
// so that the convolution rules see a constant weight: y = float32(q -
// zero point) · scale, per tensor or along axis. Products that run on a
// DequantizeLinear's integers (MatMul, Gemm) keep theirs.
func init() {
	registerRewrite("qdq-weights", func(r *rewriter) bool {
		changed := false
		for _, d := range slices.Clone(r.g.Nodes) {
			if r.foldConvDQ(d) {
				changed = true
			}
		}
		return changed
	})
}

func (r *rewriter) foldConvDQ(d *onnxpb.Node) bool {
	if !r.is(d, "DequantizeLinear") || len(d.Inputs) < 2 || len(d.Inputs) > 3 || len(d.Outputs) != 1 || d.Outputs[0] == "" {
		return false
	}
	y := d.Outputs[0]
	readers := 0
	for _, n := range r.g.Nodes {
		if r.dead[n] {
			continue
		}
		for i, in := range n.Inputs {
			if in != y {
				continue
			}
			if !r.is(n, "Conv") || i == 0 {
				return false
			}
			readers++
		}
	}
	if readers == 0 || readers != r.used[y] {
		return false
	}
	axis := int64(1)
	for _, a := range d.Attributes {
		switch a.Name {
		case "axis":
			axis = a.I
		case "output_dtype":
			if a.I != int64(onnxpb.Float) {
				return false
			}
		default: // block_size
			return false
		}
	}
	var in [3]*tensor.Tensor
	for i, name := range d.Inputs {
		if name == "" {
			continue
		}
		if p := r.inits[name]; p == nil || p.External {
			return false
		}
		if in[i] = r.constant(name); in[i] == nil {
			return false
		}
	}
	w := dequantized(in[0], in[1], in[2], axis)
	if w == nil {
		return false
	}
	r.rewire(y, r.addConstant(y, w))
	r.remove(d)
	return true
}

// dequantized returns DequantizeLinear(x, scale, zp) for an integer x,
// an FP32 scale per tensor or along axis and a zero point of x's type
// (or nil), computed as the operator does, or nil when the inputs are of
// another form.
func dequantized(x, scale, zp *tensor.Tensor, axis int64) *tensor.Tensor {
	ss, ok := scale.Data.([]float32)
	switch x.DType {
	case tensor.Int8, tensor.Uint8, tensor.Int16, tensor.Uint16, tensor.Int32:
	default:
		return nil
	}
	if !ok || len(ss) == 0 || scale.Rank() > 1 || zp != nil && (zp.DType != x.DType || zp.Len() != len(ss) || zp.Rank() != scale.Rank()) {
		return nil
	}
	inner, dim := 1, 1
	if len(ss) > 1 {
		a := int(axis)
		if a < 0 {
			a += x.Rank()
		}
		if a < 0 || a >= x.Rank() || x.Shape[a] != len(ss) {
			return nil
		}
		dim = len(ss)
		for _, n := range x.Shape[a+1:] {
			inner *= n
		}
	}
	var z []float64
	if zp != nil {
		z = zp.Float64s()
	}
	xv := x.Float64s()
	out := make([]float32, len(xv))
	for i, v := range xv {
		s := 0
		if dim > 1 {
			s = i / inner % dim
		}
		if z != nil {
			v -= z[s]
		}
		out[i] = float32(v) * ss[s]
	}
	return tensor.From(slices.Clone(x.Shape), out)
}
