package model

import (
	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "linear" rewrite fuses a MatMul by a constant 2-D weight with what
// follows it in a transformer's projections and feed-forward blocks:
//
//	Y = MatMul(X, W)              (W an initializer or a DequantizeLinear's output)
//	Y = Add(Y, bias)              (bias a float32 initializer of shape [N])
//	Y = Gelu(Y) | Relu(Y)         (Gelu's exact form)
//	Y = Add(Y, R)                 (a residual: any value but a constant)
//
// each step after the MatMul optional (at least one present), each
// intermediate read by the next step only, into one quantserve.Linear
// (package ops/matmul): the bias, activation and residual are applied on the
// product's rows as they come out, with no intermediate tensors.

func init() {
	registerRewrite("linear", func(r *rewriter) bool {
		changed := false
		for _, mm := range r.g.Nodes {
			if r.fuseLinear(mm) {
				changed = true
			}
		}
		return changed
	})
}

// fuseLinear replaces the chain starting at MatMul mm, if there is one,
// and reports whether it did.
func (r *rewriter) fuseLinear(mm *onnxpb.Node) bool {
	if !r.is(mm, "MatMul") || len(mm.Inputs) != 2 || len(mm.Outputs) != 1 || !r.linearWeight(mm.Inputs[1]) {
		return false
	}
	opset := r.opset(mm)
	inputs := []string{mm.Inputs[0], mm.Inputs[1], "", ""}
	chain := []*onnxpb.Node{mm}
	out := mm.Outputs[0]
	next := func() *onnxpb.Node {
		n := r.onlyReader(out)
		if n == nil || len(n.Outputs) != 1 || normDomain(n.Domain) == "" && r.opset(n) != opset { // the rewrite domain's Gelu serves every opset
			return nil
		}
		return n
	}
	// the bias
	if n := next(); r.is(n, "Add") && len(n.Inputs) == 2 {
		if b := otherInput(n, out); b != "" && r.linearBias(b, mm.Inputs[1]) {
			inputs[2] = b
			chain, out = append(chain, n), n.Outputs[0]
		}
	}
	// the activation
	act := ""
	if n := next(); n != nil && len(n.Inputs) == 1 {
		if gelu, exact := r.isGelu(n); r.is(n, "Relu") || gelu {
			act = n.OpType
			if gelu && !exact {
				act = "GeluTanh"
			}
			chain, out = append(chain, n), n.Outputs[0]
		}
	} else if sig, mul := r.twoReaders(out, "Sigmoid", "Mul"); sig != nil && mul != nil && r.isSiLU(out, sig, mul) &&
		r.opset(sig) == opset && r.opset(mul) == opset {
		// x·Sigmoid(x), SiLU as exporters below opset 24 write it
		act = "SiLU"
		chain, out = append(chain, sig, mul), mul.Outputs[0]
	}
	// the residual
	if n := next(); r.is(n, "Add") && len(n.Inputs) == 2 {
		if res := otherInput(n, out); res != "" && r.inits[res] == nil {
			inputs[3] = res
			chain, out = append(chain, n), n.Outputs[0]
		}
	}
	if len(chain) == 1 {
		return false
	}
	for len(inputs) > 2 && inputs[len(inputs)-1] == "" {
		inputs = inputs[:len(inputs)-1]
	}
	fused := &onnxpb.Node{
		Name: mm.Name, OpType: "Linear", Domain: rewriteDomain,
		Inputs: inputs, Outputs: []string{out},
		Attributes: []*onnxpb.Attribute{
			{Name: "activation", Type: onnxpb.AttrString, S: []byte(act)},
			{Name: "opset", Type: onnxpb.AttrInt, I: opset},
		},
	}
	last := chain[len(chain)-1]
	r.replace(last, fused, chain) // every input is computed by here
	return true
}

// exactGelu reports whether Gelu node n is the exact (erf) form.
func exactGelu(n *onnxpb.Node) bool {
	a := attrOf(n, "approximate")
	return a == nil || string(a.S) == "none"
}

// linearWeight reports whether value w is a weight the kernels take at
// load: a float32 initializer of rank 2, or a DequantizeLinear's output.
func (r *rewriter) linearWeight(w string) bool {
	if p := r.inits[w]; p != nil {
		return p.DataType == onnxpb.Float && len(p.Dims) == 2 && !p.External
	}
	return r.is(r.prod[w], "DequantizeLinear")
}

// linearBias reports whether value b is a float32 initializer of shape
// [N] for weight w's N (or, for a weight whose shape is not known here, of
// rank 1).
func (r *rewriter) linearBias(b, w string) bool {
	p := r.inits[b]
	if p == nil || p.DataType != onnxpb.Float || len(p.Dims) != 1 || p.External {
		return false
	}
	if q := r.inits[w]; q != nil {
		return p.Dims[0] == q.Dims[1]
	}
	return true
}
