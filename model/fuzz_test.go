package model

import (
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// FuzzLoad feeds arbitrary bytes to Load: it must return a model or an
// error, never panic.
func FuzzLoad(f *testing.F) {
	g := &onnxpb.Graph{
		Inputs:       []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float, HasShape: true, Shape: []onnxpb.Dim{{Param: "N"}, {Value: 2, HasValue: true}}}}},
		Initializers: []*onnxpb.Tensor{TensorToONNX("w", tensor.From([]int{2, 2}, []float32{1, 2, 3, 4}))},
		Nodes: []*onnxpb.Node{
			{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
			{OpType: "Softmax", Inputs: []string{"h"}, Outputs: []string{"y"}, Attributes: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: -1}}},
		},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
	}
	f.Add(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 13}}, Graph: g}))
	f.Add([]byte{0x3a, 0x02, 0x2a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		Load(b)
	})
}
