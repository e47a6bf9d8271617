package model

import (
	"slices"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Before a model's main graph compiles, rewrites replace patterns of nodes
// with equivalent forms that run faster: a BatchNormalization folded into
// the convolution before it, an activation or a bias addition fused into
// the product that feeds it, ONNX Runtime's graph optimizations in spirit.
// Each rewrite keeps the graph's outputs (the conformance tests hold every
// one to ONNX's tolerance) and says what it changed in the Layers it
// produces. Rewrites that need an operator ONNX lacks register it in the
// private domain "quantserve".
//
// Gradients are taken through the model as written: autodiff compiles a
// twin without rewrites (Model.Unrewritten).

// rewriteDomain is the domain of the operators rewrites introduce.
const rewriteDomain = ops.RewriteDomain

// rewrite is one rewrite rule: apply changes r's graph and reports whether
// it changed anything; rules run in registration order until none changes
// the graph.
type rewrite struct {
	name  string
	apply func(r *rewriter) bool
}

// rewrites is filled by init functions in the rewrite files.
var rewrites []rewrite

func registerRewrite(name string, apply func(r *rewriter) bool) {
	rewrites = append(rewrites, rewrite{name, apply})
}

// eachNode returns a rule that offers fuse every node of the graph as it
// stood when the rule began (fuse reports whether it rewrote around it),
// and reports whether any call did.
func eachNode(fuse func(r *rewriter, n *onnxpb.Node) bool) func(r *rewriter) bool {
	return func(r *rewriter) bool {
		changed := false
		for _, n := range slices.Clone(r.g.Nodes) {
			if fuse(r, n) {
				changed = true
			}
		}
		return changed
	}
}

// rewriter is a graph under rewriting with the indexes rules need.
type rewriter struct {
	g      *onnxpb.Graph
	opsets map[string]int64
	inits  map[string]*onnxpb.Tensor
	used   map[string]int // how many node inputs and graph outputs read a value
	prod   map[string]*onnxpb.Node
	dead   map[*onnxpb.Node]bool
	serial int
	// keep names the nodes the options name (Options.QuantizeExclude):
	// a rule that would merge several products into one node leaves them.
	keep map[string]bool
	// quantize and scheme are Options.Quantize and Options.Scheme: a rule
	// that merges products keeps each one's int8 weights as they were.
	quantize bool
	scheme   quant.Scheme
}

// applyRewrites runs every rule on g in place until none applies, and
// reports whether any did.
func applyRewrites(g *onnxpb.Graph, opsets map[string]int64, opts *Options) bool {
	for _, n := range g.Nodes {
		for _, a := range n.Attributes {
			if a.G != nil || len(a.Tensors) > 0 || a.Type == onnxpb.AttrGraphs {
				return false // subgraphs read values by name: leave such graphs as written
			}
		}
	}
	r := &rewriter{g: g, opsets: opsets, keep: nameSet(opts.QuantizeExclude), quantize: opts.Quantize, scheme: opts.Scheme}
	any := false
	for changed, rounds := true, 0; changed && rounds < 8; rounds++ {
		changed = false
		for _, rw := range rewrites {
			r.index()
			if rw.apply(r) {
				changed, any = true, true
				r.compact()
			}
		}
	}
	return any
}

// nameSet returns the set of names.
func nameSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// index builds the indexes anew; each rule sees the graph as the rules
// before it left it. The maps are reused from rule to rule: a large graph
// is indexed many times.
func (r *rewriter) index() {
	if r.inits == nil {
		r.inits, r.used, r.prod, r.dead = map[string]*onnxpb.Tensor{}, map[string]int{}, map[string]*onnxpb.Node{}, map[*onnxpb.Node]bool{}
	}
	clear(r.inits)
	clear(r.used)
	clear(r.prod)
	clear(r.dead)
	for _, p := range r.g.Initializers {
		r.inits[p.Name] = p
	}
	for _, n := range r.g.Nodes {
		for _, in := range n.Inputs {
			r.used[in]++
		}
		for _, out := range n.Outputs {
			r.prod[out] = n
		}
	}
	for _, o := range r.g.Outputs {
		r.used[o.Name]++
	}
}

// compact drops the nodes rules removed and initializers nothing reads.
func (r *rewriter) compact() {
	r.g.Nodes = slices.DeleteFunc(r.g.Nodes, func(n *onnxpb.Node) bool { return r.dead[n] })
	read := map[string]bool{}
	for _, n := range r.g.Nodes {
		for _, in := range n.Inputs {
			read[in] = true
		}
	}
	for _, o := range r.g.Outputs {
		read[o.Name] = true
	}
	inputs := map[string]bool{}
	for _, vi := range r.g.Inputs {
		inputs[vi.Name] = true
	}
	r.g.Initializers = slices.DeleteFunc(r.g.Initializers, func(p *onnxpb.Tensor) bool { return !read[p.Name] && !inputs[p.Name] })
}

// onlyReader returns the one node reading value name, when exactly one node
// does (once) and it is not a graph output.
func (r *rewriter) onlyReader(name string) *onnxpb.Node {
	if r.used[name] != 1 {
		return nil
	}
	for _, n := range r.g.Nodes {
		if !r.dead[n] && slices.Contains(n.Inputs, name) {
			return n
		}
	}
	return nil
}

// opset returns the opset the model imports for n's domain.
func (r *rewriter) opset(n *onnxpb.Node) int64 { return r.opsets[normDomain(n.Domain)] }

// is reports whether n is the ai.onnx operator typ.
func (r *rewriter) is(n *onnxpb.Node, typ string) bool {
	return n != nil && !r.dead[n] && n.OpType == typ && normDomain(n.Domain) == ""
}

// constant returns the initializer named name as a tensor, or nil.
func (r *rewriter) constant(name string) *tensor.Tensor {
	p, ok := r.inits[name]
	if !ok {
		return nil
	}
	t, err := TensorFromONNX(p)
	if err != nil {
		return nil
	}
	return t
}

// otherInput returns the input of the two-input node n that is not the
// value v ("" when both are v).
func otherInput(n *onnxpb.Node, v string) string {
	switch {
	case n.Inputs[0] == v && n.Inputs[1] != v:
		return n.Inputs[1]
	case n.Inputs[1] == v && n.Inputs[0] != v:
		return n.Inputs[0]
	}
	return ""
}

// addConstant adds an initializer with a fresh name and returns the name.
func (r *rewriter) addConstant(hint string, t *tensor.Tensor) string {
	name := r.fresh(hint)
	p := TensorToONNX(name, t)
	r.g.Initializers = append(r.g.Initializers, p)
	r.inits[name] = p
	return name
}

// fresh returns a name no value of the graph has, made from hint.
func (r *rewriter) fresh(hint string) string {
	for {
		r.serial++
		if name := hint + "/rewritten_" + itoa(r.serial); !r.taken(name) {
			return name
		}
	}
}

// taken reports whether a value of the graph has name: an initializer,
// a node's output, a value nodes read, or a graph input.
func (r *rewriter) taken(name string) bool {
	if r.inits[name] != nil || r.prod[name] != nil || r.used[name] > 0 {
		return true
	}
	return slices.ContainsFunc(r.g.Inputs, func(vi *onnxpb.ValueInfo) bool { return vi.Name == name })
}

// remove marks n dead.
func (r *rewriter) remove(n *onnxpb.Node) { r.dead[n] = true }

// replace puts fused in the place of last, a pattern's last node (every
// value the pattern reads is computed by then), removes the pattern's
// other nodes, and makes the model import the rewrite domain.
func (r *rewriter) replace(last, fused *onnxpb.Node, pattern []*onnxpb.Node) {
	for i, n := range r.g.Nodes {
		if n == last {
			r.g.Nodes[i] = fused
		}
	}
	for _, n := range pattern {
		if n != last {
			r.remove(n)
		}
	}
	r.useDomain()
}

// useDomain makes the model import the rewrite domain.
func (r *rewriter) useDomain() { r.opsets[rewriteDomain] = 1 }

// attr returns n's attribute name, or nil.
func attrOf(n *onnxpb.Node, name string) *onnxpb.Attribute {
	for _, a := range n.Attributes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// rewire makes every node that reads value from read to instead (each such
// node is replaced by a copy: nodes are shared with the decoded file).
func (r *rewriter) rewire(from, to string) {
	for i, n := range r.g.Nodes {
		if r.dead[n] || !slices.Contains(n.Inputs, from) {
			continue
		}
		c := *n
		c.Inputs = slices.Clone(n.Inputs)
		for j, in := range c.Inputs {
			if in == from {
				c.Inputs[j] = to
			}
		}
		r.g.Nodes[i] = &c
	}
}

func init() {
	// An Identity whose output no graph output names is a rename:
	// readers take its input directly.
	registerRewrite("identity", func(r *rewriter) bool {
		outputs := map[string]bool{}
		for _, o := range r.g.Outputs {
			outputs[o.Name] = true
		}
		changed := false
		for _, n := range r.g.Nodes {
			if !r.is(n, "Identity") || len(n.Inputs) != 1 || len(n.Outputs) != 1 || n.Inputs[0] == "" || outputs[n.Outputs[0]] {
				continue
			}
			r.rewire(n.Outputs[0], n.Inputs[0])
			r.remove(n)
			changed = true
		}
		return changed
	})
}
