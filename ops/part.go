package ops

import (
	"fmt"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Part returns the node of the ai.onnx operator typ at opset that
// computes one part of n, a node standing for several (a graph rewrite's
// fusion of a MatMul with the Add of its bias, say): n's name, engine and
// quantization options, no attributes, one output, and an input per entry
// of consts, whose value it is when known at load (nil otherwise), with
// the QDQ weights qdq behind it (nil: none). Its Host is the graph
// compiler's record of the part (n.PartHost), which reports the part's
// layers under typ. The inputs a part's operator holds are the part's:
// n's operator tells n's compiler which of n's own inputs it holds.
func (n *Node) Part(typ string, opset int64, consts []*tensor.Tensor, qdq []*QDQWeight) *Node {
	p := &Node{Name: n.Name, Type: typ, Opset: opset, Attrs: map[string]*onnxpb.Attribute{},
		Inputs: make([]string, len(consts)), Outputs: []string{"y"}, Consts: consts, QDQ: qdq,
		Engine: n.Engine, Quantize: n.Quantize, Scheme: n.Scheme}
	for i := range p.Inputs {
		p.Inputs[i] = fmt.Sprintf("%s:%d", n.Name, i)
	}
	if n.PartHost != nil {
		p.Host = n.PartHost(p)
	}
	return p
}

// BuildPart compiles n.Part(typ, opset, consts, qdq) with the registry's
// operator for typ at opset.
func (n *Node) BuildPart(typ string, opset int64, consts []*tensor.Tensor, qdq []*QDQWeight) (Operator, error) {
	d, err := Lookup("", typ, opset)
	if err != nil {
		return nil, err
	}
	p := n.Part(typ, opset, consts, qdq)
	attrs, err := d.Parse(p)
	if err != nil {
		return nil, err
	}
	return d.Build(p, attrs)
}
