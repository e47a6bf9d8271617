package model

import (
	"context"
	"fmt"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/reduce"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// node is what an op builder sees: the node, the opset its model imports
// for the node's domain, its attributes by name, and the values of inputs
// known at load time (initializers, constants and folded nodes; nil
// otherwise).
type node struct {
	pb     *onnxpb.Node
	name   string
	opts   *Options
	model  *Model    // the model being compiled, for Layers
	c      *compiler // the graph being compiled, for subgraphs
	opset  int64
	attrs  Attrs
	consts []*tensor.Tensor
	qdq    []*ops.QDQWeight // int8 weights behind constant DequantizeLinear outputs
	unused []bool           // inputs the compiled op does not read at run time

	// extraIn are slots of this graph the node's subgraphs capture; they
	// reach the op after its own inputs.
	extraIn []int

	// whole is the node a part of an operator belongs to (partHost); nil
	// for a graph's own node.
	whole *node
}

// Attrs are a node's attributes by name, as the file has them.
type Attrs map[string]*onnxpb.Attribute

// subgraph is a compiled graph attribute of a node (If's branches, Loop's
// and Scan's bodies). Its captured values reach the node's op at
// in[first:first+len(captures)].
type subgraph struct {
	*graph
	first int
	names []string // the graph's input names, for errors
	outs  []string // its output names
}

// subgraph compiles g, a graph attribute of n, in a scope nested in n's
// graph: names it does not define resolve to values of the enclosing
// graphs.
func (n *node) subgraph(g *onnxpb.Graph) (*subgraph, error) {
	if g == nil {
		return nil, fmt.Errorf("missing graph attribute")
	}
	sub := &compiler{ctx: n.c.ctx, m: n.model, opts: n.opts, parent: n.c, g: &graph{}}
	if err := sub.compileGraph(g, false); err != nil {
		return nil, err
	}
	s := &subgraph{graph: sub.g, first: len(n.pb.Inputs) + len(n.extraIn)}
	for _, c := range sub.g.captures {
		n.extraIn = append(n.extraIn, c.outer)
	}
	for _, vi := range g.Inputs {
		s.names = append(s.names, vi.Name)
	}
	for _, vi := range g.Outputs {
		s.outs = append(s.outs, vi.Name)
	}
	return s, nil
}

// opsSubgraph compiles g, a graph attribute of n, for a builder of an
// operator family (ops.Node.Subgraph).
func (n *node) opsSubgraph(g *onnxpb.Graph) (ops.Graph, error) {
	s, err := n.subgraph(g)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Inputs returns the names of the subgraph's inputs (ops.Graph).
func (s *subgraph) Inputs() []string { return s.names }

// Outputs returns the names of the subgraph's outputs (ops.Graph).
func (s *subgraph) Outputs() []string { return s.outs }

// Run runs the subgraph under c with the given inputs (ops.Graph); in is
// the node's full input list, which carries the captured values. A run
// that keeps every value keeps them in the subgraph too.
func (s *subgraph) Run(c *ops.Context, in []*tensor.Tensor, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ctx := c.Context()
	if c.KeepValues() && !valuesKept(ctx) {
		ctx = context.WithValue(ctx, keepValuesKey{}, true)
	}
	if e := c.Engine(); e != s.exec && e == s.exec.Serial() {
		ctx = context.WithValue(ctx, engineKey{}, e) // a step the run keeps on one core
	}
	return s.call(ctx, in, inputs)
}

// call runs the subgraph with the given inputs; in is the node's full
// input list, which carries the captured values.
func (s *subgraph) call(ctx context.Context, in []*tensor.Tensor, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(inputs) != len(s.inputSlot) {
		return nil, inputErrorf("subgraph takes %d inputs, got %d", len(s.inputSlot), len(inputs))
	}
	return s.run(ctx, inputs, in[s.first:s.first+len(s.captures)])
}

// checkArity verifies the count of inputs (min..max) and outputs.
func (n *node) checkArity(minIn, maxIn, minOut, maxOut int) error {
	if len(n.pb.Inputs) < minIn || len(n.pb.Inputs) > maxIn {
		return fmt.Errorf("has %d inputs, takes %d to %d", len(n.pb.Inputs), minIn, maxIn)
	}
	if len(n.pb.Outputs) < minOut || len(n.pb.Outputs) > maxOut {
		return fmt.Errorf("has %d outputs, takes %d to %d", len(n.pb.Outputs), minOut, maxOut)
	}
	return nil
}

// The kit's helpers under the names this package's operators use (see
// package ops).

func broadcastTo[T tensor.Elem](data []T, shape, out []int) ([]T, error) {
	return ops.BroadcastTo(data, shape, out)
}

func equalShape(a, b []int) bool { return ops.EqualShape(a, b) }

func castTo(x *tensor.Tensor, dt tensor.DataType) (*tensor.Tensor, error) {
	return tensorops.CastTo(x, dt)
}

func transpose(x *tensor.Tensor, p []int) *tensor.Tensor {
	t, err := tensorops.Permute(nil, x, p)
	if err != nil {
		panic(err) // with no request to watch, Transpose cannot fail
	}
	return t
}

// AddLayer records a product with a constant weight the node's operator
// packed at load in the model's Layers (ops.LayerRecorder). Its Kernels
// name the kernels first: "int8 ..." exactly when the product runs on the
// int8 kernels (Layer.Int8).
func (n *node) AddLayer(k, cols int, kernels string) {
	n.model.Layers = append(n.model.Layers, Layer{Node: n.name, Op: n.pb.OpType, K: k, N: cols, Kernels: kernels})
}

// KeepFloat returns why the quantization policy keeps the node's
// products float32 in a quantized model ("feeds Log",
// "quantize_exclude"), or "" (ops.FloatKeeper).
func (n *node) KeepFloat() string {
	return n.opts.plan[n.graphNode().pb]
}

// graphNode returns the graph's node n is, or is a part of.
func (n *node) graphNode() *node {
	for n.whole != nil {
		n = n.whole
	}
	return n
}

// reduceBlock bounds the run of elements summed in x's own type before
// the partial sums go into the float64 total (see reduce.Block).
const reduceBlock = reduce.Block

func rowSumSquares[T float32 | float64](x []T) float64 { return reduce.RowSumSquares(x) }

func prodInts(s []int) int { return ops.ProdInts(s) }

// partHost is the compiler's record of a part of n's operator
// (ops.Node.PartHost): a node of its own, whose layers are the model's,
// reported under the part's op type.
func (n *node) partHost(p *ops.Node) any {
	pb := &onnxpb.Node{Name: n.pb.Name, OpType: p.Type, Inputs: p.Inputs, Outputs: p.Outputs}
	return &node{pb: pb, name: n.name, opts: n.opts, model: n.model, c: n.c, opset: p.Opset, attrs: Attrs(p.Attrs),
		consts: p.Consts, qdq: p.QDQ, unused: make([]bool, len(p.Inputs)), whole: n.graphNode()}
}

// HoldInputs marks inputs i as held by the compiled operator: not fed to
// it at run time (ops.InputHolder).
func (n *node) HoldInputs(i ...int) {
	for _, k := range i {
		if k >= 0 && k < len(n.unused) {
			n.unused[k] = true
		}
	}
}
