package ops

import (
	"fmt"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
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

	// Engine is the engine the model is compiled for: the kernel table
	// and threads products run on (builders pack weights for it).
	Engine *gemm.Engine

	// Host is the graph compiler's own record of the node, for builders
	// that still live in package model.
	Host any
}

// Const returns the value of input i known at load, or nil.
func (n *Node) Const(i int) *tensor.Tensor {
	if i < 0 || i >= len(n.Consts) {
		return nil
	}
	return n.Consts[i]
}

// CheckArity verifies the count of inputs (minIn..maxIn) and outputs.
func (n *Node) CheckArity(minIn, maxIn, minOut, maxOut int) error {
	if len(n.Inputs) < minIn || len(n.Inputs) > maxIn {
		return fmt.Errorf("has %d inputs, takes %d to %d", len(n.Inputs), minIn, maxIn)
	}
	if len(n.Outputs) < minOut || len(n.Outputs) > maxOut {
		return fmt.Errorf("has %d outputs, takes %d to %d", len(n.Outputs), minOut, maxOut)
	}
	return nil
}
