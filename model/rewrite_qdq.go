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
// DequantizeLinears so that the convolution rules see constants, and
// the "conv-fuse" rule then takes the pair after a convolution into the
// fused convolution as its last output stage (matchConvQDQ), with
// HardSwish spelled out between pairs (matchConvHardSwishQDQ); the
// "qdq-residual" rule then takes a residual block's Add (with its
// activation and pair) into the convolution whose pair the Add reads.

func init() {
	registerRewrite("qdq", eachNode((*rewriter).fuseQDQ))
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
	registerRewrite("qdq-weights", eachNode((*rewriter).foldConvDQ))
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

// The "qdq-residual" rewrite takes a static QDQ file's residual block,
// after the "conv-fuse" rule gave a convolution the pair after it, into
// that convolution:
//
//	c = FusedConv(...) with the pair p last   (its qdq_* attributes)
//	s = Add(c, r) or Sum(c, r)                r any other value
//	a = an activation of s (Relu, ...)        optional (matchConvActivation)
//	y = QuantizeDequantize(a)                 optional (matchConvQDQ)
//
// becomes one FusedConv with p as its residual pair (residual_qdq_*),
// applied before r is added, r its residual, the activation and the last
// pair its own: the same float32 operations in the same order (an Add
// of two values is the same whichever comes first), so its output is the
// unfused graph's bit for bit. c must be read by the Add alone and
// carry no residual, activation or bound of its own.
func init() {
	registerRewrite("qdq-residual", eachNode((*rewriter).fuseResidualQDQ))
}

// fuseResidualQDQ takes the residual Add or Sum add, when it matches,
// into the fused convolution computing one of its operands, and reports
// whether it did.
func (r *rewriter) fuseResidualQDQ(add *onnxpb.Node) bool {
	if r.dead[add] || !(r.is(add, "Add") && r.opset(add) >= 7 || r.is(add, "Sum") && r.opset(add) >= 8) ||
		len(add.Inputs) != 2 || len(add.Outputs) != 1 || add.Outputs[0] == "" || add.Inputs[0] == add.Inputs[1] || len(add.Attributes) > 0 {
		return false
	}
	var c *onnxpb.Node
	res := ""
	for i, x := range add.Inputs {
		p := r.prod[x]
		if p == nil || r.dead[p] || !isFusedConv(p) || len(p.Outputs) != 1 || r.used[x] != 1 || attrOf(p, "qdq_scales") == nil ||
			attrOf(p, "residual_qdq_scales") != nil || attrOf(p, "activation") != nil || attrOf(p, "bound") != nil ||
			len(p.Inputs) > fusedResidual && p.Inputs[fusedResidual] != "" {
			continue
		}
		if o := add.Inputs[1-i]; o != "" && !r.constantish(o) {
			c, res = p, o
			break
		}
	}
	if c == nil {
		return false
	}
	var attrs []*onnxpb.Attribute
	fused := []string{add.OpType}
	for _, a := range c.Attributes {
		switch a.Name {
		case "qdq_scales", "qdq_zero_points", "qdq_type":
			b := *a
			b.Name = "residual_" + a.Name
			attrs = append(attrs, &b)
		case "fused":
			fused = append(bytesToStrings(a.Strings), fused...)
		default:
			attrs = append(attrs, a)
		}
	}
	absorbed, last := []*onnxpb.Node{add}, add
	if act, nodes := matchConvActivation(r, add.Outputs[0]); act != nil {
		attrs = append(attrs, act...)
		absorbed, last = append(absorbed, nodes...), nodes[len(nodes)-1]
		fused = append(fused, nodes[0].OpType)
		if len(nodes) > 1 {
			fused[len(fused)-1] = "HardSwish"
		}
	}
	if q, n := matchConvQDQ(r, last.Outputs[0]); n != nil {
		attrs = append(attrs, q...)
		absorbed, last = append(absorbed, n), n
		fused = append(fused, "QuantizeDequantize")
	}
	attrs = append(attrs, &onnxpb.Attribute{Name: "fused", Type: onnxpb.AttrStrings, Strings: stringsToBytes(fused)})
	inputs := slices.Clone(c.Inputs)
	for len(inputs) <= fusedResidual {
		inputs = append(inputs, "")
	}
	inputs[fusedResidual] = res
	n := &onnxpb.Node{Name: c.Name, OpType: c.OpType, Domain: c.Domain, Inputs: inputs, Outputs: slices.Clone(last.Outputs), Attributes: attrs}
	r.g.Nodes[slices.Index(r.g.Nodes, last)] = n
	r.remove(c)
	for _, a := range absorbed {
		r.remove(a)
	}
	return true
}

func bytesToStrings(b [][]byte) []string {
	s := make([]string, len(b))
	for i, v := range b {
		s[i] = string(v)
	}
	return s
}

// isQDQ reports whether n is a quantserve.QuantizeDequantize the "qdq"
// rule made.
func isQDQ(r *rewriter, n *onnxpb.Node) bool {
	return n != nil && !r.dead[n] && n.OpType == "QuantizeDequantize" && n.Domain == rewriteDomain
}

// matchConvQDQ matches a QuantizeDequantize that alone reads value x and
// returns the FusedConv attributes of its pair (qdq_scales, its
// qdq_zero_points and qdq_type: conv.FusedConv applies it last, with the
// node's bits) and the node, or nil.
func matchConvQDQ(r *rewriter, x string) ([]*onnxpb.Attribute, *onnxpb.Node) {
	n := r.onlyReader(x)
	if !isQDQ(r, n) || n.Inputs[0] != x {
		return nil, nil
	}
	p, ok := qdqPairOf(r, n)
	if !ok {
		return nil, nil
	}
	return p.attributes(""), n
}

// qdqPair is a QuantizeDequantize's constants: quantize scale and zero
// point, dequantize scale and zero point, through typ ("uint8" or
// "int8").
type qdqPair struct {
	qs, ds float32
	qz, dz int64
	typ    string
}

// qdqPairOf returns the constants of QuantizeDequantize n, when they are
// the scalars its kernels take.
func qdqPairOf(r *rewriter, n *onnxpb.Node) (qdqPair, bool) {
	if !isQDQ(r, n) || len(n.Inputs) != 5 || n.Inputs[0] == "" || len(n.Outputs) != 1 || n.Outputs[0] == "" || len(n.Attributes) > 0 {
		return qdqPair{}, false
	}
	scale := func(name string) (float32, bool) {
		t := r.constant(name)
		if t == nil || t.DType != tensor.Float32 || t.Len() != 1 || t.Rank() > 1 {
			return 0, false
		}
		return t.Data.([]float32)[0], true
	}
	zt := tensor.Uint8
	zero := func(name string) (int64, bool) {
		if name == "" {
			return 0, true
		}
		t := r.constant(name)
		if t == nil || t.DType != zt || t.Len() != 1 || t.Rank() > 1 {
			return 0, false
		}
		return int64(t.Float64s()[0]), true
	}
	if t := r.constant(n.Inputs[2]); t != nil && t.DType == tensor.Int8 {
		zt = tensor.Int8
	}
	qs, ok1 := scale(n.Inputs[1])
	ds, ok2 := scale(n.Inputs[3])
	qz, ok3 := zero(n.Inputs[2])
	dz, ok4 := zero(n.Inputs[4])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return qdqPair{}, false
	}
	p := qdqPair{qs: qs, ds: ds, qz: qz, dz: dz, typ: "uint8"}
	if zt == tensor.Int8 {
		p.typ = "int8"
	}
	return p, true
}

// attributes returns FusedConv's attributes of p as the pair prefix
// names: "" the pair applied last, "input_" the one on its input.
func (p qdqPair) attributes(prefix string) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{
		{Name: prefix + "qdq_scales", Type: onnxpb.AttrFloats, Floats: []float32{p.qs, p.ds}},
		{Name: prefix + "qdq_zero_points", Type: onnxpb.AttrInts, Ints: []int64{p.qz, p.dz}},
		{Name: prefix + "qdq_type", Type: onnxpb.AttrString, S: []byte(p.typ)},
	}
}

// matchConvHardSwishQDQ matches HardSwish as exporters spell it out with
// a static QDQ file's pairs between the steps (its Clip removed: the
// second pair saturates), on a convolution's output x:
//
//	a = QDQ(x)   b = QDQ(Add(a, c))   m = QDQ(Mul(a, b))   y = Div(m, d) (or Mul)
//
// c and d float32 constants of one element (or DequantizeLinears of
// such), each value read by the nodes shown alone. It returns FusedConv's
// attributes of activation HardSwishQDQ and the nodes it spans, the last
// the Div or Mul by d, or nil.
func matchConvHardSwishQDQ(r *rewriter, x string) ([]*onnxpb.Attribute, []*onnxpb.Node) {
	q0a, q0 := matchConvQDQ(r, x)
	if q0 == nil {
		return nil, nil
	}
	a := q0.Outputs[0]
	add, mul := r.twoReaders(a, "Add", "Mul")
	binary := func(n *onnxpb.Node) bool {
		return n != nil && r.opset(n) >= 7 && len(n.Attributes) == 0 && len(n.Inputs) == 2 && len(n.Outputs) == 1 && n.Outputs[0] != ""
	}
	if !binary(add) || !binary(mul) {
		return nil, nil
	}
	c, cdq, ok := r.qdqScalarOther(add, a)
	if !ok {
		return nil, nil
	}
	q1a, q1 := matchConvQDQ(r, add.Outputs[0])
	if q1 == nil {
		return nil, nil
	}
	b := q1.Outputs[0]
	if !(mul.Inputs[0] == a && mul.Inputs[1] == b || mul.Inputs[1] == a && mul.Inputs[0] == b) || r.used[b] != 1 {
		return nil, nil
	}
	q2a, q2 := matchConvQDQ(r, mul.Outputs[0])
	if q2 == nil {
		return nil, nil
	}
	m := q2.Outputs[0]
	scale := r.onlyReader(m)
	var div float32
	switch {
	case r.is(scale, "Div") && scale.Inputs[0] == m:
		div = 1
	case r.is(scale, "Mul"):
	default:
		return nil, nil
	}
	if !binary(scale) {
		return nil, nil
	}
	d, ddq, ok := r.qdqScalarOther(scale, m)
	if !ok {
		return nil, nil
	}
	var scales []float32
	var zps []int64
	typ := ""
	for _, q := range [][]*onnxpb.Attribute{q0a, q1a, q2a} {
		scales, zps = append(scales, q[0].Floats...), append(zps, q[1].Ints...)
		if typ != "" && typ != string(q[2].S) {
			return nil, nil
		}
		typ = string(q[2].S)
	}
	return []*onnxpb.Attribute{
		{Name: "activation", Type: onnxpb.AttrString, S: []byte("HardSwishQDQ")},
		{Name: "activation_params", Type: onnxpb.AttrFloats, Floats: []float32{c, d, div}},
		{Name: "activation_qdq_scales", Type: onnxpb.AttrFloats, Floats: scales},
		{Name: "activation_qdq_zero_points", Type: onnxpb.AttrInts, Ints: zps},
		{Name: "activation_qdq_type", Type: onnxpb.AttrString, S: []byte(typ)},
	}, append(slices.DeleteFunc([]*onnxpb.Node{cdq, ddq}, func(n *onnxpb.Node) bool { return n == nil }), q0, add, q1, mul, q2, scale)
}

// qdqScalarOther returns the constant float32 scalar a binary node n
// combines with x: a constant (see outputScalar), or a DequantizeLinear
// of per-tensor constants (a static QDQ file's quantized constant
// operand), computed as the operator does; the DequantizeLinear too when
// n alone reads it.
func (r *rewriter) qdqScalarOther(n *onnxpb.Node, x string) (float32, *onnxpb.Node, bool) {
	o := otherInput(n, x)
	if o == "" {
		return 0, nil, false
	}
	if v, ok := r.outputScalar(o); ok {
		return v, nil, true
	}
	d := r.prod[o]
	if !r.is(d, "DequantizeLinear") || len(d.Inputs) < 2 || len(d.Inputs) > 3 || len(d.Outputs) != 1 {
		return 0, nil, false
	}
	for _, a := range d.Attributes {
		if a.Name != "axis" && !(a.Name == "output_dtype" && a.I == int64(onnxpb.Float)) {
			return 0, nil, false
		}
	}
	var in [3]*tensor.Tensor
	for i, name := range d.Inputs {
		if name == "" {
			continue
		}
		if p := r.inits[name]; p == nil || p.External || !qdqScalar(p, p.DataType) {
			return 0, nil, false
		}
		if in[i] = r.constant(name); in[i] == nil {
			return 0, nil, false
		}
	}
	y := dequantized(in[0], in[1], in[2], 0)
	if y == nil || y.Rank() > 3 {
		return 0, nil, false
	}
	if r.used[o] != 1 {
		d = nil
	}
	return y.Data.([]float32)[0], d, true
}
