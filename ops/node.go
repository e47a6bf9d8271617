package ops

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Node is what a builder sees of one ONNX node at load: its name and
// operator, the opset its model imports for the node's domain, its
// attributes by name, its inputs and outputs, and the values of inputs
// known at load (initializers, constants and folded nodes; nil otherwise).
type Node struct {
	Name    string // the node's name, or "#index" when the file gives none
	Type    string // the op type
	Domain  string // "" for ai.onnx
	Opset   int64
	Attrs   map[string]*onnxpb.Attribute
	Inputs  []string // input names; "" for an absent optional input
	Outputs []string // output names; "" for an output nobody reads
	Consts  []*tensor.Tensor
	// QDQ, parallel to Inputs, holds the integer weights behind an input
	// that is a DequantizeLinear of constants (see QDQSource), nil for
	// any other; the graph compiler fills it. Builders call QDQInput.
	QDQ []*QDQWeight

	// Engine is the engine the model is compiled for: the kernel table
	// and threads products run on (builders pack weights for it).
	Engine *gemm.Engine

	// Quantize asks builders to run products whose constant weight holds
	// at least MinQuantizedWeights values on the int8 kernels, the weight
	// quantized at load with Scheme (the model's options).
	Quantize bool
	Scheme   quant.Scheme

	// Subgraph compiles a graph attribute of the node (see Graph); the
	// graph compiler sets it. Builders call Graph.
	Subgraph func(g *onnxpb.Graph) (Graph, error)

	// PartHost returns the graph compiler's record (the Host) of a part
	// of the node (see Part); the graph compiler sets it.
	PartHost func(part *Node) any

	// Host is the graph compiler's own record of the node: what it
	// implements of LayerRecorder and InputHolder hears a builder's
	// AddLayer and HoldInputs (nil: nobody listens, as in opstest).
	Host any
}

// FloatKeeper is implemented by a graph compiler's record of a node
// (Node.Host) that applies a quantization policy: products whose result
// reaches a range-sensitive operator, or that the model's configuration
// excludes, stay float32.
type FloatKeeper interface {
	// KeepFloat says why the node's products stay float32 though the
	// model is quantized ("feeds Log", "quantize_exclude"), or "".
	KeepFloat() string
}

// KeepFloat returns why the graph compiler's quantization policy keeps
// the node's products float32 though the model is quantized (Quantize),
// or "" when it leaves them to the builder: a builder that would run a
// product on the int8 kernels runs it in float32 instead and reports the
// layer as "float32 (" + reason + ")". Without a compiler that applies a
// policy (Host nil, as in opstest) it returns "".
func (n *Node) KeepFloat() string {
	if k, ok := n.Host.(FloatKeeper); ok {
		return k.KeepFloat()
	}
	return ""
}

// ActivationSource is implemented by a graph compiler's record of a node
// (Node.Host) that says how the activations of the node's int8 products
// are quantized: with per-tensor parameters calibrated at load (static
// quantization), or per row while their range is measured (calibration).
type ActivationSource interface {
	// Activations returns the node's activation quantization, or nil for
	// the default: per row, nothing measured.
	Activations() *gemm.Activations
}

// Activations returns how a builder that runs a product on the int8
// kernels quantizes its activations (gemm.Engine.QuantizeRowsAs): nil,
// the default, per row; a static *gemm.Activations, with the parameters
// the compiler's calibration fixed for the node (the builder's layer then
// says "(static activations)"); a measuring one, per row while their
// range is recorded. Without a compiler that calibrates (Host nil, as in
// opstest) it returns nil.
func (n *Node) Activations() *gemm.Activations {
	if a, ok := n.Host.(ActivationSource); ok {
		return a.Activations()
	}
	return nil
}

// Graph compiles g, a graph attribute of the node, with the compiler's
// Subgraph.
func (n *Node) Graph(g *onnxpb.Graph) (Graph, error) {
	if g == nil {
		return nil, fmt.Errorf("missing graph attribute")
	}
	if n.Subgraph == nil {
		return nil, Unsupportedf("graph attributes without a graph compiler")
	}
	return n.Subgraph(g)
}

// Const returns the value of input i known at load, or nil.
func (n *Node) Const(i int) *tensor.Tensor {
	if i < 0 || i >= len(n.Consts) {
		return nil
	}
	return n.Consts[i]
}

// CheckArity verifies the count of inputs (minIn..maxIn) and outputs,
// and that the first minIn inputs, the ones every node of the operator
// has, are named (see RequireInputs). An operator whose optional inputs
// come before required ones checks with CheckCounts and RequireInputs
// at the positions it requires.
func (n *Node) CheckArity(minIn, maxIn, minOut, maxOut int) error {
	if err := n.CheckCounts(minIn, maxIn, minOut, maxOut); err != nil {
		return err
	}
	return n.RequireInputs(minIn)
}

// CheckCounts verifies the count of inputs (minIn..maxIn) and outputs,
// named or not.
func (n *Node) CheckCounts(minIn, maxIn, minOut, maxOut int) error {
	if len(n.Inputs) < minIn || len(n.Inputs) > maxIn {
		return fmt.Errorf("has %d inputs, takes %d to %d", len(n.Inputs), minIn, maxIn)
	}
	if len(n.Outputs) < minOut || len(n.Outputs) > maxOut {
		return fmt.Errorf("has %d outputs, takes %d to %d", len(n.Outputs), minOut, maxOut)
	}
	return nil
}

// RequireInputs refuses a node whose first k inputs (the ones its
// operator requires) are not all named: ONNX marks an absent optional
// input with an empty name, which a required input may not have.
func (n *Node) RequireInputs(k int) error { return n.requireRange(0, k) }

// RequireFrom refuses a node with an absent input at i or after it: the
// inputs of an operator whose optional ones come first (Loop's M and
// cond) and whose others are all required.
func (n *Node) RequireFrom(i int) error { return n.requireRange(i, len(n.Inputs)) }

func (n *Node) requireRange(from, to int) error {
	for i := from; i < to && i < len(n.Inputs); i++ {
		if n.Inputs[i] == "" {
			return fmt.Errorf("input %d is required but absent", i)
		}
	}
	return nil
}
