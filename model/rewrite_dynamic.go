package model

import (
	"slices"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "dynamic" rewrite fuses ONNX Runtime's dynamically quantized
// products, what its quantize_dynamic writes for each MatMul by a
// constant weight (and every exported model_quantized.onnx holds):
//
//	xq, xs, xz = DynamicQuantizeLinear(x)
//	Yi = MatMulInteger(xq, W, xz, Wz)    (W an INT8 or UINT8 initializer [K, N];
//	                                      Wz absent, or one of its type, scalar or [N])
//	Yf = Cast(Yi, to = FLOAT)
//	S  = Mul(xs, Ws)                     (Ws an FP32 initializer, scalar or [N])
//	Y  = Mul(Yf, S)                      (either operand order in both Muls)
//	Y  = Add(Y, bias)                    (optional: an FP32 initializer [N])
//	Y  = act(Y)                          (optional: Relu, Gelu of either form,
//	                                      or SiLU as Y·Sigmoid(Y))
//	Y  = Add(Y, R)                       (optional: a residual, any value but a
//	                                      constant computed before the
//	                                      DynamicQuantizeLinear)
//
// into one quantserve.DynamicLinear (package ops/matmul) per
// DynamicQuantizeLinear, holding every product that reads its xq (a
// transformer's Q, K and V projections share one): x is quantized once,
// straight into the rows the int8 kernels read, and each product's scales
// and bias are applied as its rows come out. Each intermediate must be
// read by the next step only (S may have other readers: its Mul then
// stays). The DynamicQuantizeLinear goes when nothing else reads its
// outputs, and stays for its other readers otherwise. The node computes
// what the graph did, bit for bit.

func init() {
	registerRewrite("dynamic", eachNode((*rewriter).fuseDynamic))
}

// dynamicChain is one product of a DynamicQuantizeLinear's output that
// the rewrite fuses.
type dynamicChain struct {
	inputs []string // W, Wz, Ws, bias, residual ("" absent)
	act    string   // "" or Linear's activation
	out    string
	nodes  []*onnxpb.Node // the nodes that go
	scales bool           // whether S's Mul is among them
}

// fuseDynamic replaces the products of DynamicQuantizeLinear d, if any
// match, and reports whether it did.
func (r *rewriter) fuseDynamic(d *onnxpb.Node) bool {
	if !r.is(d, "DynamicQuantizeLinear") || len(d.Inputs) != 1 || d.Inputs[0] == "" || len(d.Outputs) != 3 {
		return false
	}
	xq, xs, xz := d.Outputs[0], d.Outputs[1], d.Outputs[2]
	if xq == "" || xs == "" || xz == "" {
		return false
	}
	// values computed before d, which a residual must be (the fused
	// node takes d's place)
	before := map[string]bool{}
	for _, vi := range r.g.Inputs {
		before[vi.Name] = true
	}
	for _, n := range r.g.Nodes {
		if n == d {
			break
		}
		for _, o := range n.Outputs {
			before[o] = true
		}
	}
	var chains []dynamicChain
	for _, n := range r.g.Nodes {
		if r.is(n, "MatMulInteger") && len(n.Inputs) > 0 && n.Inputs[0] == xq {
			if ch, ok := r.dynamicChain(n, xq, xs, xz, before); ok {
				chains = append(chains, ch)
			}
		}
	}
	if len(chains) == 0 {
		return false
	}
	scales := 0
	for _, ch := range chains {
		if ch.scales {
			scales++
		}
	}
	acts := &onnxpb.Attribute{Name: "activations", Type: onnxpb.AttrStrings}
	fused := &onnxpb.Node{Name: d.Name, OpType: "DynamicLinear", Domain: rewriteDomain, Inputs: []string{d.Inputs[0]},
		Attributes: []*onnxpb.Attribute{acts, {Name: "opset", Type: onnxpb.AttrInt, I: r.opset(d)}}}
	for _, ch := range chains {
		acts.Strings = append(acts.Strings, []byte(ch.act))
		fused.Inputs = append(fused.Inputs, ch.inputs...)
		fused.Outputs = append(fused.Outputs, ch.out)
		for _, n := range ch.nodes {
			r.remove(n)
		}
	}
	// The fused node takes d's place: every reader of its outputs comes
	// after d's products, which come after d.
	i := slices.Index(r.g.Nodes, d)
	if r.used[xq] == len(chains) && r.used[xz] == len(chains) && r.used[xs] == scales {
		r.g.Nodes[i] = fused
	} else {
		r.g.Nodes = slices.Insert(r.g.Nodes, i+1, fused)
	}
	r.useDomain()
	return true
}

// dynamicChain matches the product MatMulInteger mi of xq (zero point xz,
// scale xs) and what follows it.
// A residual must be one of the values before.
func (r *rewriter) dynamicChain(mi *onnxpb.Node, xq, xs, xz string, before map[string]bool) (dynamicChain, bool) {
	var ch dynamicChain
	if len(mi.Inputs) < 3 || len(mi.Inputs) > 4 || mi.Inputs[1] == xq || mi.Inputs[2] != xz || len(mi.Outputs) != 1 {
		return ch, false
	}
	w := r.inits[mi.Inputs[1]]
	if w == nil || w.External || len(w.Dims) != 2 || w.DataType != onnxpb.Int8 && w.DataType != onnxpb.Uint8 ||
		w.Dims[0] < 1 || w.Dims[0] > gemm.MaxQK || w.Dims[1] < 1 {
		return ch, false
	}
	cols := w.Dims[1]
	perColumn := func(p *onnxpb.Tensor, dt onnxpb.DataType) bool { // scalar, [1] or [N] of type dt
		if p == nil || p.External || p.DataType != dt || len(p.Dims) > 1 {
			return false
		}
		return len(p.Dims) == 0 || p.Dims[0] == 1 || p.Dims[0] == cols
	}
	wz := ""
	if len(mi.Inputs) == 4 && mi.Inputs[3] != "" {
		if wz = mi.Inputs[3]; !perColumn(r.inits[wz], w.DataType) {
			return ch, false
		}
	}
	opset := r.opset(mi)
	next := func(v string) *onnxpb.Node {
		n := r.onlyReader(v)
		if n == nil || len(n.Outputs) != 1 || normDomain(n.Domain) == "" && r.opset(n) != opset { // the rewrite domain's Gelu serves every opset
			return nil
		}
		return n
	}
	cast := next(mi.Outputs[0])
	if !r.is(cast, "Cast") || len(cast.Inputs) != 1 {
		return ch, false
	}
	if to := attrOf(cast, "to"); to == nil || to.I != int64(onnxpb.Float) {
		return ch, false
	}
	mul := next(cast.Outputs[0])
	if !r.is(mul, "Mul") || len(mul.Inputs) != 2 {
		return ch, false
	}
	s := otherInput(mul, cast.Outputs[0])
	sm := r.prod[s]
	if s == "" || !r.is(sm, "Mul") || len(sm.Inputs) != 2 || len(sm.Outputs) != 1 {
		return ch, false
	}
	ws := otherInput(sm, xs)
	if ws == "" || !perColumn(r.inits[ws], onnxpb.Float) {
		return ch, false
	}
	ch.inputs = []string{mi.Inputs[1], wz, ws, "", ""}
	ch.nodes = []*onnxpb.Node{mi, cast, mul}
	ch.out = mul.Outputs[0]
	if r.used[s] == 1 {
		ch.nodes = append(ch.nodes, sm)
		ch.scales = true
	}
	if add := next(ch.out); r.is(add, "Add") && len(add.Inputs) == 2 {
		b := otherInput(add, ch.out)
		if p := r.inits[b]; b != "" && p != nil && !p.External && p.DataType == onnxpb.Float && len(p.Dims) == 1 && p.Dims[0] == cols {
			ch.inputs[3] = b
			ch.nodes = append(ch.nodes, add)
			ch.out = add.Outputs[0]
		}
	}
	if g := next(ch.out); g != nil && len(g.Inputs) == 1 {
		if gelu, exact := r.isGelu(g); gelu || r.is(g, "Relu") {
			ch.act = g.OpType
			if gelu && !exact {
				ch.act = "GeluTanh"
			}
			ch.nodes = append(ch.nodes, g)
			ch.out = g.Outputs[0]
		}
	} else if sig, mul := r.twoReaders(ch.out, "Sigmoid", "Mul"); sig != nil && mul != nil && r.isSiLU(ch.out, sig, mul) &&
		r.opset(sig) == opset && r.opset(mul) == opset {
		ch.act = "SiLU" // x·Sigmoid(x)
		ch.nodes = append(ch.nodes, sig, mul)
		ch.out = mul.Outputs[0]
	}
	if add := next(ch.out); r.is(add, "Add") && len(add.Inputs) == 2 {
		if res := otherInput(add, ch.out); res != "" && r.inits[res] == nil && before[res] {
			ch.inputs[4] = res
			ch.nodes = append(ch.nodes, add)
			ch.out = add.Outputs[0]
		}
	}
	return ch, true
}
