package model

import (
	"context"
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/norm"
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
	lin    *linear // set by MatMul/Gemm with a constant weight
	consts []*tensor.Tensor
	qdq    []*qdqWeight // int8 weights behind constant DequantizeLinear outputs
	unused []bool       // inputs the compiled op does not read at run time

	// runCtx, when a builder sets it, runs the node instead of the opFunc
	// the builder returns: for operators that need the request's context
	// (control flow running subgraphs).
	runCtx func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error)
	// extraIn are slots of this graph the node's subgraphs capture; they
	// reach the op after its own inputs.
	extraIn []int
	// qdqOut, set by DequantizeLinear of constants, are the int8 weights
	// behind its output, kept when the node folds.
	qdqOut *qdqWeight
}

// qdqInput returns the int8 weights behind input i (a constant
// DequantizeLinear output), laid out for x·W (transposed for Gemm's
// transB), or nil.
func (n *node) qdqInput(i int, transposed bool) *intWeights {
	if i >= len(n.qdq) || n.qdq[i] == nil {
		return nil
	}
	return n.qdq[i].weights(transposed)
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

func normAxis(axis int64, rank int) (int, error) { return ops.NormAxis(axis, rank) }

func sameType(op string, ts ...*tensor.Tensor) error { return ops.SameType(op, ts...) }

func broadcastShapes(shapes ...[]int) ([]int, error) { return ops.BroadcastShapes(shapes...) }

func broadcastShape(a, b []int) ([]int, error) { return ops.BroadcastShape(a, b) }

func binaryMap[T, R tensor.Elem](a, b []T, as, bs []int, f func(x, y T) R) ([]int, []R, error) {
	return ops.BinaryMap(a, b, as, bs, f)
}

func broadcastTo[T tensor.Elem](data []T, shape, out []int) ([]T, error) {
	return ops.BroadcastTo(data, shape, out)
}

func equalShape(a, b []int) bool { return ops.EqualShape(a, b) }

func optionalInput(in []*tensor.Tensor, i int) *tensor.Tensor { return ops.Optional(in, i) }

func scalarInt(t *tensor.Tensor, what string) (int64, error) { return ops.ScalarInt(t, what) }

func unary(f func(x *tensor.Tensor) (*tensor.Tensor, error)) opFunc { return opFunc(ops.Unary(f)) }

func gather(data any, idx []int) any { return ops.Gather(data, idx) }

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

func requireInputs(n *node, k int) error { return (&ops.Node{Inputs: n.pb.Inputs}).RequireInputs(k) }

func roundFloat64s(v []float64, dt tensor.DataType) any { return ops.RoundFloat64s(v, dt) }

func exp32(x float32) float32 { return ops.Exp32(x) }

func sigmoid(x float64) float64 { return ops.Sigmoid(x) }

// AddLayer records a product with a constant weight the node's operator
// packed at load in the model's Layers (ops.LayerRecorder).
func (n *node) AddLayer(k, cols int, kernels string) {
	n.model.Layers = append(n.model.Layers, Layer{Node: n.name, Op: n.pb.OpType, K: k, N: cols, Kernels: kernels})
}

// reduceBlock bounds the run of elements summed in x's own type before
// the partial sums go into the float64 total (see reduce.Block).
const reduceBlock = reduce.Block

func rowSumSquares[T float32 | float64](x []T) float64 { return reduce.RowSumSquares(x) }

// opsetAttr names an attribute an operator has only in opsets
// [since, until] (until 0: every later one); see ops.OpsetAttr.
type opsetAttr struct {
	name         string
	since, until int64
}

func checkAttrOpsets(n *node, attrs ...opsetAttr) error {
	oa := make([]ops.OpsetAttr, len(attrs))
	for i, a := range attrs {
		oa[i] = ops.OpsetAttr{Name: a.name, Since: a.since, Until: a.until}
	}
	return (&ops.Node{Attrs: n.attrs, Opset: n.opset}).CheckAttrOpsets(oa...)
}

func prodInts(s []int) int { return ops.ProdInts(s) }

func widenHalf(x *tensor.Tensor) ([]float32, bool) { return ops.WidenHalf(x) }

func narrowHalf(dt tensor.DataType, f []float32) any { return ops.NarrowHalf(dt, f) }

func elemHalfTo32(t *tensor.Tensor) *tensor.Tensor { return ops.HalfTo32(t) }

func elemToHalf(t *tensor.Tensor, dt tensor.DataType) *tensor.Tensor { return ops.ToHalf(t, dt) }

func fromFloat64s(dt tensor.DataType, shape []int, v []float64) *tensor.Tensor {
	return ops.FromFloat64s(dt, shape, v)
}

func unaryResult(t *tensor.Tensor, err error) ([]*tensor.Tensor, error) { return ops.Result(t, err) }

func lnFloat32s(x *tensor.Tensor, op string) ([]float32, error) { return ops.Float32s(x, op) }

func lnRound(v []float32, dt tensor.DataType) any { return ops.RoundFloat32s(v, dt) }

func bnParams(ts []*tensor.Tensor) ([4][]float64, error) { return norm.BatchNormParams(ts) }

func newBatchNormFold(scale, bias, mean, variance []float64, eps float64) *norm.BatchNormFold {
	return norm.NewBatchNormFold(scale, bias, mean, variance, eps)
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
