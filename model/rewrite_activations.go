package model

import (
	"math"
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// The "gelu" rewrite runs GELU spelled out in elementary operators, as
// exporters write it below opset 20 (every transformer from PyTorch's
// nn.GELU, BERT's and GPT-2's activations), as one quantserve.Gelu, the
// Gelu operator on the engine's vector kernel: one pass over the values
// instead of five to eight, and a node the "linear" rule then takes into
// the product before it. The forms, each product in any order and
// association, each constant a float32 scalar (an initializer or a
// Constant node) within a millionth of its value:
//
//	exact:  x · 0.5 · (1 + Erf(x / √2))      or Erf(x · (1/√2))
//	tanh:   x · 0.5 · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))
//	        x³ as Pow(x, 3) or a product of three x
//	        or Tanh(√(2/π) · x · (1 + 0.044715 · x · x)) (gelu_fast)
//
// Every node between x and the result but the last must be read once,
// by the pattern. The fused node computes the function more closely than
// the spelled-out float32 steps (1 + tanh u cancels where u is negative),
// within the few ulps of its kernels.

func init() {
	registerRewrite("gelu", eachNode((*rewriter).fuseGelu))
}

// fuseGelu replaces the spelled-out GELU whose last product is y, if it
// is one, and reports whether it did.
func (r *rewriter) fuseGelu(y *onnxpb.Node) bool {
	if !r.is(y, "Mul") || len(y.Inputs) != 2 || len(y.Outputs) != 1 || y.Outputs[0] == "" {
		return false
	}
	leaves, chain := r.productLeaves(y)
	if len(leaves) != 3 {
		return false
	}
	// one leaf is 0.5, one is 1 + f(x), one is x
	half := slices.IndexFunc(leaves, func(v string) bool { return r.scalarNear(v, 0.5) })
	if half < 0 {
		return false
	}
	rest := slices.Delete(slices.Clone(leaves), half, half+1)
	for _, order := range [2][2]int{{0, 1}, {1, 0}} {
		x, s := rest[order[0]], rest[order[1]]
		if approx, nodes, ok := r.geluSum(s, x); ok {
			r.replaceGelu(y, x, approx, append(chain, nodes...))
			return true
		}
	}
	return false
}

// productLeaves returns the factors of the product y computes: its inputs,
// with each input a Mul read by y alone replaced by that Mul's inputs (one
// level), and the Mul nodes so taken.
func (r *rewriter) productLeaves(y *onnxpb.Node) (leaves []string, chain []*onnxpb.Node) {
	for _, in := range y.Inputs {
		if m := r.producerReadOnce(in, "Mul"); m != nil && len(m.Inputs) == 2 {
			leaves = append(leaves, m.Inputs...)
			chain = append(chain, m)
			continue
		}
		leaves = append(leaves, in)
	}
	return leaves, chain
}

// producerReadOnce returns the ai.onnx node of type typ computing value v
// when one node reads v, once, and no graph output is v; or nil.
func (r *rewriter) producerReadOnce(v, typ string) *onnxpb.Node {
	n := r.prod[v]
	if !r.is(n, typ) || r.used[v] != 1 || len(n.Outputs) != 1 {
		return nil
	}
	return n
}

// geluSum reports whether s is 1 + Erf(x/√2) or 1 + Tanh(√(2/π)·(x +
// 0.044715·x³)), which form ("none" or "tanh"), and its nodes.
func (r *rewriter) geluSum(s, x string) (approx string, nodes []*onnxpb.Node, ok bool) {
	add := r.producerReadOnce(s, "Add")
	if add == nil || len(add.Inputs) != 2 {
		return "", nil, false
	}
	for i, f := range add.Inputs {
		if !r.scalarNear(add.Inputs[1-i], 1) {
			continue
		}
		if erf := r.producerReadOnce(f, "Erf"); erf != nil && len(erf.Inputs) == 1 {
			if g, ok := r.erfArgument(erf.Inputs[0], x); ok {
				return "none", []*onnxpb.Node{add, erf, g}, true
			}
		}
		if tanh := r.producerReadOnce(f, "Tanh"); tanh != nil && len(tanh.Inputs) == 1 {
			if more, ok := r.tanhArgument(tanh.Inputs[0], x); ok {
				return "tanh", append([]*onnxpb.Node{add, tanh}, more...), true
			}
		}
	}
	return "", nil, false
}

// erfArgument reports whether g is x/√2 or x·(1/√2), and its node.
func (r *rewriter) erfArgument(g, x string) (*onnxpb.Node, bool) {
	if d := r.producerReadOnce(g, "Div"); d != nil && len(d.Inputs) == 2 && d.Inputs[0] == x && r.scalarNear(d.Inputs[1], math.Sqrt2) {
		return d, true
	}
	if m := r.producerReadOnce(g, "Mul"); m != nil && len(m.Inputs) == 2 && r.scalarNear(otherInput(m, x), 1/math.Sqrt2) {
		return m, true
	}
	return nil, false
}

// tanhArgument reports whether g is √(2/π)·(x + 0.044715·x³), or
// √(2/π)·x·(1 + 0.044715·x·x) (Hugging Face's gelu_fast), each product
// in any order and association, and its nodes.
func (r *rewriter) tanhArgument(g, x string) ([]*onnxpb.Node, bool) {
	leaves, nodes := r.factors(g, maxFactors)
	if len(nodes) == 0 {
		return nil, false
	}
	k := slices.IndexFunc(leaves, func(v string) bool { return r.scalarNear(v, math.Sqrt(2/math.Pi)) })
	if k < 0 {
		return nil, false
	}
	rest := slices.Delete(leaves, k, k+1)
	var sum *onnxpb.Node
	var term string
	switch {
	case len(rest) == 1: // x + 0.044715·x³
		if sum = r.producerReadOnce(rest[0], "Add"); sum == nil || len(sum.Inputs) != 2 {
			return nil, false
		}
		term = otherInput(sum, x)
	case len(rest) == 2 && (rest[0] == x) != (rest[1] == x): // x · (1 + 0.044715·x·x)
		s := rest[0]
		if s == x {
			s = rest[1]
		}
		if sum = r.producerReadOnce(s, "Add"); sum == nil || len(sum.Inputs) != 2 {
			return nil, false
		}
		for i, in := range sum.Inputs {
			if r.scalarNear(sum.Inputs[1-i], 1) {
				term = in
			}
		}
	default:
		return nil, false
	}
	tl, tn := r.factors(term, maxFactors)
	c := slices.IndexFunc(tl, func(v string) bool { return r.scalarNear(v, 0.044715) })
	if len(tn) == 0 || c < 0 {
		return nil, false
	}
	power := slices.Delete(tl, c, c+1)
	nodes = append(append(nodes, sum), tn...)
	if len(rest) == 2 { // x·x
		return nodes, len(power) == 2 && power[0] == x && power[1] == x
	}
	if len(power) == 3 && power[0] == x && power[1] == x && power[2] == x {
		return nodes, true
	}
	if len(power) == 1 {
		if p := r.producerReadOnce(power[0], "Pow"); p != nil && len(p.Inputs) == 2 && p.Inputs[0] == x && r.scalarNear(p.Inputs[1], 3) {
			return append(nodes, p), true
		}
	}
	return nil, false
}

// maxFactors bounds how many Mul nodes deep factors looks.
const maxFactors = 4

// factors returns the factors of the value v when a Mul read once
// computes it: the inputs of that Mul and of the Muls read once below it,
// up to depth levels, with the Mul nodes so taken; otherwise v alone.
func (r *rewriter) factors(v string, depth int) (leaves []string, nodes []*onnxpb.Node) {
	m := r.producerReadOnce(v, "Mul")
	if m == nil || len(m.Inputs) != 2 || depth == 0 {
		return []string{v}, nil
	}
	nodes = []*onnxpb.Node{m}
	for _, in := range m.Inputs {
		l, n := r.factors(in, depth-1)
		leaves = append(leaves, l...)
		nodes = append(nodes, n...)
	}
	return leaves, nodes
}

// scalarNear reports whether v is a float32 scalar constant (rank 0 or 1)
// within a millionth of want, relative.
func (r *rewriter) scalarNear(v string, want float64) bool {
	if v == "" {
		return false
	}
	c, ok := r.constScalar(v, 1)
	return ok && math.Abs(float64(c)-want) <= 1e-6*math.Abs(want)
}

// replaceGelu puts a quantserve.Gelu of x (approximate as given) in y's
// place and removes the pattern's other nodes.
func (r *rewriter) replaceGelu(y *onnxpb.Node, x, approx string, others []*onnxpb.Node) {
	fused := &onnxpb.Node{
		Name: y.Name, OpType: "Gelu", Domain: rewriteDomain,
		Inputs: []string{x}, Outputs: []string{y.Outputs[0]},
		Attributes: []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte(approx)}},
	}
	r.replace(y, fused, others) // x is computed before the pattern's first node, so before y
}

// isGelu reports whether n is a Gelu node, of ai.onnx or one the "gelu"
// rule wrote, and whether of the exact form.
func (r *rewriter) isGelu(n *onnxpb.Node) (gelu, exact bool) {
	if n == nil || r.dead[n] || n.OpType != "Gelu" || normDomain(n.Domain) != "" && n.Domain != rewriteDomain {
		return false, false
	}
	return true, exactGelu(n)
}
