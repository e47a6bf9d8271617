package model

import (
	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "linear" rewrite fuses a MatMul by a constant 2-D weight with what
// follows it in a transformer's projections and feed-forward blocks, and
// a Gemm as exporters write a fully connected layer (PyTorch's Linear:
// transB=1, a bias C of shape [N], alpha and beta 1) likewise:
//
//	Y = MatMul(X, W)              (W an initializer or a DequantizeLinear's output)
//	  | Gemm(X, B[, C])           (B an initializer: W is B, or B transposed)
//	Y = Add(Y, bias)              (bias a float32 initializer of shape [N]; C is one)
//	Y = Gelu(Y) | Relu(Y)         (Gelu's exact form)
//	Y = Add(Y, R)                 (a residual: any value but a constant)
//
// each step after the MatMul optional (at least one present, or a
// Gemm's C), each intermediate read by the next step only, into one
// quantserve.Linear (package ops/matmul): the bias, activation and
// residual are applied on the product's rows as they come out, with no
// intermediate tensors. A Gemm's alpha·(X·B') + beta·C with alpha and
// beta 1 is X·W + C, each value the same product and one float32
// addition, as the fused node computes it.

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
	var w, bias string
	transB := false // a Gemm's B, to be transposed into W
	switch {
	case r.is(mm, "MatMul") && len(mm.Inputs) == 2 && len(mm.Outputs) == 1 && r.linearWeight(mm.Inputs[1]):
		w = mm.Inputs[1]
	case r.is(mm, "Gemm"):
		var ok bool
		if transB, bias, ok = r.gemmLinear(mm); !ok {
			return false
		}
		w = mm.Inputs[1]
	default:
		return false
	}
	opset := r.opset(mm)
	inputs := []string{mm.Inputs[0], w, bias, ""}
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
	if n := next(); bias == "" && r.is(n, "Add") && len(n.Inputs) == 2 {
		if b := otherInput(n, out); b != "" && !transB && r.linearBias(b, w) {
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
	if len(chain) == 1 && inputs[2] == "" {
		return false
	}
	if transB {
		if inputs[1] = r.transposed(w); inputs[1] == "" {
			return false
		}
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
	if mm.OpType == "Gemm" {
		fused.Attributes = append(fused.Attributes, &onnxpb.Attribute{Name: "product", Type: onnxpb.AttrString, S: []byte("Gemm")})
	}
	last := chain[len(chain)-1]
	r.replace(last, fused, chain) // every input is computed by here
	return true
}

// gemmLinear reports whether Gemm node g is a product by a constant
// weight a Linear runs, and its bias: alpha 1, A not transposed, B a
// float32 initializer of rank 2 (W is B, or B transposed when transB
// says so), and C absent ("") or, with beta 1, a float32 initializer of
// shape [N].
func (r *rewriter) gemmLinear(g *onnxpb.Node) (transB bool, bias string, ok bool) {
	if len(g.Inputs) < 2 || len(g.Inputs) > 3 || len(g.Outputs) != 1 || g.Inputs[0] == "" {
		return false, "", false
	}
	b := r.inits[g.Inputs[1]]
	if attrFloat(g, "alpha", 1) != 1 || fusedAttrInt(g, "transA") != 0 || b == nil || b.DataType != onnxpb.Float || len(b.Dims) != 2 || b.External {
		return false, "", false
	}
	transB = fusedAttrInt(g, "transB") != 0
	n := b.Dims[1]
	if transB {
		n = b.Dims[0]
	}
	if len(g.Inputs) == 3 && g.Inputs[2] != "" {
		c := r.inits[g.Inputs[2]]
		if attrFloat(g, "beta", 1) != 1 || !r.linearBias(g.Inputs[2], "") || c.Dims[0] != n {
			return false, "", false
		}
		bias = g.Inputs[2]
	}
	return transB, bias, true
}

// transposed adds an initializer holding 2-D float32 initializer w
// transposed and returns its name ("" when w cannot be read).
func (r *rewriter) transposed(w string) string {
	t := r.constant(w)
	if t == nil || t.Rank() != 2 {
		return ""
	}
	return r.addConstant(w, transpose(t, []int{1, 0}))
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
