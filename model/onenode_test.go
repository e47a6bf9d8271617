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
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	for _, o := range outs {
		if o != "" {
			g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: o, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}})
		}
	}
	return Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g}))
}

func pnRandom(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := prodInts(shape)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return tensor.From(shape, x)
}
