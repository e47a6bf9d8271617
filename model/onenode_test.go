package model

import (
	"math/rand/v2"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// pnInput is a graph input of a one-node test model, or an initializer
// when init is set.
type pnInput struct {
	name string
	dt   tensor.DataType
	init *tensor.Tensor
}

// pnModel compiles a one-node model: op over inputs, with outputs y0,
// y1, ... (an empty name in outs leaves that output unnamed).
func pnModel(opset int64, op string, inputs []pnInput, outs []string, attrs ...*onnxpb.Attribute) (*Model, error) {
	return Load(pnModelBytes("", opset, op, inputs, outs, attrs...))
}

// pnModelBytes encodes pnModel's model, its node of the domain (""
// for ai.onnx) whose opset it imports. An input with an empty name is
// left out; the outputs are float32.
func pnModelBytes(domain string, opset int64, op string, inputs []pnInput, outs []string, attrs ...*onnxpb.Attribute) []byte {
	g := &onnxpb.Graph{}
	var names []string
	for _, in := range inputs {
		names = append(names, in.name)
		switch {
		case in.name == "":
		case in.init != nil:
			g.Initializers = append(g.Initializers, TensorToONNX(in.name, in.init))
		default:
			g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: in.name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(in.dt)}})
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Domain: domain, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	for _, o := range outs {
		if o != "" {
			g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: o, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}})
		}
	}
	opsets := []onnxpb.OpsetID{{Version: opset}}
	if domain != "" { // any ai.onnx opset: the node is the domain's
		opsets = []onnxpb.OpsetID{{Version: 17}, {Domain: domain, Version: opset}}
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: opsets, Graph: g})
}

func pnRandom(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := prodInts(shape)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, x)
}
