package onnxbuild

import (
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// EndlessLoop is a model whose one run never ends on its own: y = x
// carried through a Loop of 2^62 trips whose body passes it on. x and y
// are FLOAT [-1, 4] (batchable along dimension 0); only the run's context
// stops it.
func EndlessLoop() Graph {
	vi := func(name string, dt onnxpb.DataType) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: dt}}
	}
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{vi("i", onnxpb.Int64), vi("c", onnxpb.Bool), vi("v", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{OpType: "Identity", Inputs: []string{"v"}, Outputs: []string{"v2"}},
		},
		Outputs: []*onnxpb.ValueInfo{vi("c2", onnxpb.Bool), vi("v2", onnxpb.Float)},
	}
	return Graph{
		Opset:   16,
		Inputs:  []IO{V("x", tensor.Float32, -1, 4)},
		Outputs: []IO{V("y", tensor.Float32, -1, 4)},
		Inits: map[string]*tensor.Tensor{
			"trips": tensor.Scalar(int64(1) << 62),
			"cond":  tensor.Scalar(true),
		},
		Nodes: []Node{{Op: "Loop", Inputs: []string{"trips", "cond", "x"}, Outputs: []string{"y"},
			Attrs: []*onnxpb.Attribute{{Name: "body", Type: onnxpb.AttrGraph, G: body}}}},
	}
}

// FilledConstant is a model whose output is a constant folded at load
// from a few bytes: y = ConstantOfShape(shape) filled with value (its
// type is value's), plus x (of shape's rank, broadcast) so the graph has
// an input. A large shape makes a small file ask for a large fold.
func FilledConstant(shape []int64, value *tensor.Tensor) Graph {
	dims := make([]int, len(shape))
	for i := range dims {
		dims[i] = 1
	}
	return Graph{
		Inputs:  []IO{V("x", value.DType, dims...)},
		Outputs: []IO{V("y", value.DType)},
		Inits:   map[string]*tensor.Tensor{"shape": tensor.From([]int{len(shape)}, shape)},
		Nodes: []Node{
			{Op: "ConstantOfShape", Inputs: []string{"shape"}, Outputs: []string{"c"},
				Attrs: []*onnxpb.Attribute{{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("value", value)}}},
			{Op: "Add", Inputs: []string{"c", "x"}, Outputs: []string{"y"}},
		},
	}
}

// AttentionMask is the mask exported transformers build from their ids:
// y = ConstantOfShape(Concat(Shape(ids), Shape(ids))) filled with 1, a
// FLOAT [1, n, 1, n] from INT64 ids [1, n]. Its output grows with the
// square of the request's length.
func AttentionMask() Graph {
	one := model.TensorToONNX("value", tensor.From([]int{1}, []float32{1}))
	return Graph{
		Inputs:  []IO{V("ids", tensor.Int64, 1, -1)},
		Outputs: []IO{V("mask", tensor.Float32, 1, -1, 1, -1)},
		Nodes: []Node{
			{Op: "Shape", Inputs: []string{"ids"}, Outputs: []string{"s"}},
			{Op: "Concat", Inputs: []string{"s", "s"}, Outputs: []string{"ss"}, Attrs: []*onnxpb.Attribute{IntAttr("axis", 0)}},
			{Op: "ConstantOfShape", Inputs: []string{"ss"}, Outputs: []string{"mask"},
				Attrs: []*onnxpb.Attribute{{Name: "value", Type: onnxpb.AttrTensor, T: one}}},
		},
	}
}
