package model

import (
	"fmt"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// node is what an op builder sees: the node, the model's opset, its
// attributes by name, and the values of inputs known at load time
// (initializers and Constant outputs; nil otherwise).
type node struct {
	pb     *onnxpb.Node
	name   string
	opts   *Options
	model  *Model // the model being compiled, for Layers
	opset  int64
	attrs  Attrs
	lin    *linear // set by MatMul/Gemm with a constant weight
	consts []*tensor.Tensor
	qdq    []*qdqWeight // int8 weights behind constant DequantizeLinear outputs
	unused []bool       // inputs the compiled op does not read at run time
}

// qdqInput returns the int8 weights behind input i (a constant
// DequantizeLinear output), laid out for x·W (transposed for Gemm's
// transB), or nil.
func (n *node) qdqInput(i int, transposed bool) *quant.Weights {
	if i >= len(n.qdq) || n.qdq[i] == nil {
		return nil
	}
	return n.qdq[i].weights(transposed)
}

type opBuilder func(n *node) (opFunc, error)

// registry maps ONNX op types to builders. It is filled by init functions
// in the op files and never changed afterwards.
var registry = map[string]opBuilder{}

// Attrs are a node's attributes by name.
type Attrs map[string]*onnxpb.Attribute

// Int returns an INT attribute, or def when absent.
func (a Attrs) Int(name string, def int64) (int64, error) {
	return (&node{attrs: a}).intAttr(name, def)
}

// Float returns a FLOAT attribute, or def when absent.
func (a Attrs) Float(name string, def float32) (float32, error) {
	return (&node{attrs: a}).floatAttr(name, def)
}

// Ints returns an INTS attribute and whether it is present.
func (a Attrs) Ints(name string) ([]int64, bool, error) { return (&node{attrs: a}).intsAttr(name) }

// String returns a STRING attribute, or def when absent.
func (a Attrs) String(name, def string) (string, error) {
	return (&node{attrs: a}).stringAttr(name, def)
}

func (n *node) attr(name string, typ onnxpb.AttrType) (*onnxpb.Attribute, error) {
	a, ok := n.attrs[name]
	if !ok {
		return nil, nil
	}
	if a.Type != typ && a.Type != onnxpb.AttrUndefined {
		return nil, fmt.Errorf("attribute %q has type %d, want %d", name, a.Type, typ)
	}
	return a, nil
}

func (n *node) intAttr(name string, def int64) (int64, error) {
	a, err := n.attr(name, onnxpb.AttrInt)
	if err != nil || a == nil {
		return def, err
	}
	return a.I, nil
}

func (n *node) floatAttr(name string, def float32) (float32, error) {
	a, err := n.attr(name, onnxpb.AttrFloat)
	if err != nil || a == nil {
		return def, err
	}
	return a.F, nil
}

func (n *node) intsAttr(name string) ([]int64, bool, error) {
	a, err := n.attr(name, onnxpb.AttrInts)
	if err != nil || a == nil {
		return nil, false, err
	}
	return a.Ints, true, nil
}

func (n *node) stringAttr(name, def string) (string, error) {
	a, err := n.attr(name, onnxpb.AttrString)
	if err != nil || a == nil {
		return def, err
	}
	return string(a.S), nil
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

// onlyAttrs refuses attributes the implementation does not know, so a
// model relying on one never runs with different semantics.
func (n *node) onlyAttrs(names ...string) error {
	for name := range n.attrs {
		known := false
		for _, k := range names {
			if k == name {
				known = true
			}
		}
		if !known {
			return unsupportedf("attribute %q", name)
		}
	}
	return nil
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, inputErrorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

func sameType(op string, ts ...*tensor.Tensor) error {
	for _, t := range ts[1:] {
		if t != nil && t.DType != ts[0].DType {
			return inputErrorf("%s operands have types %v and %v", op, ts[0].DType, t.DType)
		}
	}
	return nil
}
