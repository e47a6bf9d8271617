package model

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// The quantization policy: where int8 hurts, products stay float32.
//
// Dynamic int8 quantization adds to a product's result an error of a few
// steps of its activations' row scale: harmless where the result is
// normalized, activated or multiplied again, ruinous where it reaches an
// operator whose output swings with small changes near zero or at large
// values. A power spectrum multiplied by a mel filterbank and taken to
// its Log turns the bins that round to zero into -inf (or the model's
// floor); a Div by a computed value, a Sqrt, a Reciprocal, a Pow with a
// fractional or negative exponent, an Exp do the like. So before any node
// compiles, the compiler walks the graph forward from every product's
// output, through the operators that carry values along (activations,
// sums, reshapes, ...), and stops at the first of:
//
//   - a range-sensitive operator (Log, Div, Pow, Sqrt, Reciprocal, Exp):
//     the product stays float32, its layer saying "float32 (feeds Log)";
//   - a normalization (LayerNormalization, BatchNormalization, Softmax,
//     ...), a reduction (ReduceMean, ...), or another product: the error
//     is averaged, bounded or multiplied into a new scale from there on;
//   - a graph output.
//
// A Div by a constant, or a Pow to a constant positive whole exponent, is
// a scale or a polynomial (the exact Gelu's x/√2, the tanh Gelu's x³):
// the walk goes through. A Div whose divisor is itself a normalizing
// statistic (a Sqrt, a reduction, or either guarded by an Add or Max of a
// constant: the decomposed forms of LayerNormalization and L2
// normalization) is a normalization.
//
// Options.QuantizeExclude names nodes that stay float32 whatever the walk
// finds (ONNX Runtime's nodes_to_exclude): their layers say
// "float32 (quantize_exclude)".

// ExcludedReason is the reason a layer of a node Options.QuantizeExclude
// names gives.
const ExcludedReason = "quantize_exclude"

// sensitiveOps are the operators a product's int8 error must not reach.
var sensitiveOps = map[string]bool{"Log": true, "Div": true, "Pow": true, "Sqrt": true, "Reciprocal": true, "Exp": true}

// boundaryOps end the walk: normalizations, reductions and products,
// after which a product's error no longer reaches further as it was.
var boundaryOps = map[string]bool{
	"LayerNormalization": true, "BatchNormalization": true, "InstanceNormalization": true, "GroupNormalization": true,
	"RMSNormalization": true, "SimplifiedLayerNormalization": true, "SkipLayerNormalization": true,
	"SkipSimplifiedLayerNormalization": true, "LpNormalization": true, "MeanVarianceNormalization": true, "LRN": true,
	"Softmax": true, "LogSoftmax": true, "Hardmax": true,
	"ReduceMean": true, "ReduceSum": true, "ReduceSumSquare": true, "ReduceL1": true, "ReduceL2": true,
	"ReduceLogSum": true, "ReduceLogSumExp": true, "ReduceMax": true, "ReduceMin": true, "ReduceProd": true,
	"GlobalAveragePool": true, "GlobalMaxPool": true, "GlobalLpPool": true,
	"ArgMax": true, "ArgMin": true, "TopK": true, "Shape": true, "Size": true,
}

// productOps are the operators that multiply by a weight: the layers the
// policy decides, and where a walk from another one ends.
var productOps = map[string]bool{
	"MatMul": true, "Gemm": true, "Conv": true, "ConvTranspose": true, "Einsum": true,
	"Linear": true, fusedConvType: true, "FusedMatMul": true, "Attention": true, "MultiHeadAttention": true,
	"MatMulInteger": true, "ConvInteger": true, "QLinearMatMul": true, "QLinearConv": true, "DynamicLinear": true,
	"RNN": true, "GRU": true, "LSTM": true,
}

// quantPlan is the policy's decision for a model: the nodes whose
// products stay float32, with why.
type quantPlan map[*onnxpb.Node]string

// planQuantization sets opts.plan: for the graph g about to be compiled
// (the file's graph pb after the rewrites), which products stay float32
// and why. Every node opts.QuantizeExclude names must be a node of the
// file.
func (opts *Options) planQuantization(pb, g *onnxpb.Graph) error {
	plan, err := opts.decideQuantization(pb, g)
	opts.plan = plan
	return err
}

// decideQuantization is planQuantization's decision.
func (opts *Options) decideQuantization(pb, g *onnxpb.Graph) (quantPlan, error) {
	if len(opts.QuantizeExclude) > 0 {
		names := map[string]string{}
		collectNames(pb, names)
		collectNames(g, names)
		for _, x := range opts.QuantizeExclude {
			if names[x] == "" {
				return nil, fmt.Errorf("model: quantize_exclude names %q, which is not a node of the model", x)
			}
		}
	}
	if !opts.Quantize {
		return nil, nil
	}
	plan := quantPlan{}
	exclude := map[string]bool{}
	for _, x := range opts.QuantizeExclude {
		exclude[x] = true
	}
	plan.walk(g, exclude)
	return plan, nil
}

// collectNames adds the names of g's nodes, and of its subgraphs', to
// names, with their op types.
func collectNames(g *onnxpb.Graph, names map[string]string) {
	if g == nil {
		return
	}
	for _, n := range g.Nodes {
		if n.Name != "" {
			names[n.Name] = n.OpType
		}
		for _, sub := range subgraphsOf(n) {
			collectNames(sub, names)
		}
	}
}

// subgraphsOf returns n's graph attributes.
func subgraphsOf(n *onnxpb.Node) []*onnxpb.Graph {
	var out []*onnxpb.Graph
	for _, a := range n.Attributes {
		if a.G != nil {
			out = append(out, a.G)
		}
	}
	return out
}

// policyGraph indexes one graph for the walk.
type policyGraph struct {
	readers map[string][]*onnxpb.Node // the nodes reading a value
	prod    map[string]*onnxpb.Node   // the node writing a value
	consts  map[string]bool           // values known at load: initializers, Constant outputs
	inits   map[string]*onnxpb.Tensor // the graph's initializers
	reach   map[string]string         // memo: the sensitive operator a value reaches ("" none)
	busy    map[string]bool           // values being walked (a malformed cycle ends there)
}

// walk decides the products of g and of its subgraphs.
func (p quantPlan) walk(g *onnxpb.Graph, exclude map[string]bool) {
	pg := &policyGraph{readers: map[string][]*onnxpb.Node{}, prod: map[string]*onnxpb.Node{},
		consts: map[string]bool{}, inits: map[string]*onnxpb.Tensor{}, reach: map[string]string{}, busy: map[string]bool{}}
	for _, t := range g.Initializers {
		pg.consts[t.Name] = true
		pg.inits[t.Name] = t
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !slices.Contains(pg.readers[in], n) {
				pg.readers[in] = append(pg.readers[in], n)
			}
		}
		for _, out := range n.Outputs {
			if out != "" {
				pg.prod[out] = n
				if n.OpType == "Constant" && n.Domain == "" {
					pg.consts[out] = true
				}
			}
		}
	}
	for _, n := range g.Nodes {
		for _, sub := range subgraphsOf(n) {
			p.walk(sub, exclude)
		}
		if exclude[n.Name] {
			p[n] = ExcludedReason
			continue
		}
		if !productOps[n.OpType] {
			continue
		}
		for _, out := range n.Outputs {
			if op := pg.reaches(out); op != "" {
				p[n] = "feeds " + op
				break
			}
		}
	}
}

// reaches returns the range-sensitive operator value v reaches before a
// boundary, or "".
func (pg *policyGraph) reaches(v string) string {
	if v == "" {
		return ""
	}
	if op, ok := pg.reach[v]; ok {
		return op
	}
	if pg.busy[v] {
		return ""
	}
	pg.busy[v] = true
	op := ""
	for _, r := range pg.readers[v] {
		if op = pg.through(r, v); op != "" {
			break
		}
	}
	pg.busy[v] = false
	pg.reach[v] = op
	return op
}

// through returns the range-sensitive operator value v reaches by way of
// its reader r, or "".
func (pg *policyGraph) through(r *onnxpb.Node, v string) string {
	if r.Domain != "" && r.Domain != "ai.onnx" && r.Domain != rewriteDomain {
		return "" // another domain's operator: not known to carry values along
	}
	switch {
	case productOps[r.OpType] || boundaryOps[r.OpType]:
		return ""
	case r.OpType == "Div" && len(r.Inputs) == 2:
		switch divisor := r.Inputs[1]; {
		case divisor == v:
			return "Div"
		case pg.normalizing(divisor):
			return "" // a normalization
		case !pg.consts[divisor]:
			return "Div"
		} // a scale: the walk goes on
	case r.OpType == "Pow" && len(r.Inputs) == 2:
		if r.Inputs[1] != v && pg.wholeExponent(r.Inputs[1]) {
			break // a polynomial
		}
		return "Pow"
	case sensitiveOps[r.OpType]:
		return r.OpType
	}
	for _, out := range r.Outputs {
		if op := pg.reaches(out); op != "" {
			return op
		}
	}
	return ""
}

// normalizing reports whether divisor v is a normalizing statistic: the
// output of a Sqrt or a reduction, or of an Add, Max or Clip guarding one
// with a constant (the epsilon of a decomposed LayerNormalization).
func (pg *policyGraph) normalizing(v string) bool {
	for range 3 {
		n := pg.prod[v]
		if n == nil {
			return false
		}
		switch {
		case n.OpType == "Sqrt" || strings.HasPrefix(n.OpType, "Reduce"):
			return true
		case n.OpType == "Add" || n.OpType == "Max" || n.OpType == "Clip":
			next := ""
			for _, in := range n.Inputs {
				if in != "" && !pg.consts[in] {
					if next != "" {
						return false
					}
					next = in
				}
			}
			v = next
		default:
			return false
		}
	}
	return false
}

// wholeExponent reports whether exponent v is a constant positive whole
// number (2, 3, ...: a Constant node's value or a scalar initializer):
// such a Pow is a polynomial.
func (pg *policyGraph) wholeExponent(v string) bool {
	var t *onnxpb.Tensor
	if n := pg.prod[v]; n != nil && n.OpType == "Constant" {
		for _, a := range n.Attributes {
			switch a.Name {
			case "value_float":
				return whole(float64(a.F))
			case "value_int":
				return whole(float64(a.I))
			case "value":
				t = a.T
			}
		}
	} else {
		t = pg.inits[v]
	}
	if t == nil {
		return false
	}
	x, err := TensorFromONNX(t)
	if err != nil || x.Len() != 1 {
		return false
	}
	c, err := castTo(x, tensor.Float64)
	if err != nil {
		return false
	}
	f, ok := c.Data.([]float64)
	return ok && whole(f[0])
}

// whole reports whether f is a small positive whole number.
func whole(f float64) bool { return f >= 1 && f <= 16 && f == math.Trunc(f) }
