package onnxbuild

import (
	"strings"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// EndlessLoop is a model whose one run never ends on its own: y = x
// carried through a Loop of 2^62 trips whose body passes it on. x and y
// are FLOAT [-1, 4] (batchable along dimension 0); only the run's context
// stops it.
func EndlessLoop() Graph {
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{loopVI("i", onnxpb.Int64), loopVI("c", onnxpb.Bool), loopVI("v", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{OpType: "Identity", Inputs: []string{"v"}, Outputs: []string{"v2"}},
		},
		Outputs: []*onnxpb.ValueInfo{loopVI("c2", onnxpb.Bool), loopVI("v2", onnxpb.Float)},
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

// ShapeBomb is a model of one or two nodes whose output's size follows
// from the values of its inputs, not their sizes: a request of a few
// bytes can ask it for gigabytes.
type ShapeBomb struct {
	Graph Graph
	// Inputs makes a request from four numbers (sizes, counts, fill
	// values: each model says how it reads them); the tensors it makes
	// stay small (at most 2^16 elements) whatever the numbers.
	Inputs func(a, b, c int64, s float32) map[string]*tensor.Tensor
}

// ShapeBombs returns the value-driven models by name: ConstantOfShape,
// Expand, Tile, Range, Pad (constant, edge, reflect), Resize (by sizes
// and by scales), Upsample, OneHot, Gather (of value-driven indices),
// MatMul (of value-shaped operands), Add and Where (broadcasts of [n,1]
// and [1,m]), CenterCropPad, Col2Im, AffineGrid, StringSplit, Loop (a
// value-driven trip count stacking a scan output) and DFT (a
// value-driven length over b signals). Each graph's output is "y".
func ShapeBombs() map[string]ShapeBomb {
	ints := func(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
	floats := func(shape []int, v float32) *tensor.Tensor {
		d := make([]float32, numel(shape))
		for i := range d {
			d[i] = v + float32(i)
		}
		return tensor.From(shape, d)
	}
	one := func(op string, opset int64, ins []IO, attrs ...*onnxpb.Attribute) Graph {
		names := make([]string, len(ins))
		for i, io := range ins {
			names[i] = io.Name
		}
		return Graph{Opset: opset, Inputs: ins, Outputs: []IO{{Name: "y", DType: tensor.Float32}},
			Nodes: []Node{{Op: op, Inputs: names, Outputs: []string{"y"}, Attrs: attrs}}}
	}
	pad := func(mode string) ShapeBomb {
		return ShapeBomb{
			Graph: one("Pad", 18, []IO{V("x", tensor.Float32, 2, 3), V("pads", tensor.Int64, 4)}, StringAttr("mode", mode)),
			Inputs: func(a, b, c int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{2, 3}, s), "pads": ints(a, b, c, b)}
			},
		}
	}
	resize := func(op string, opset int64, sizes bool) ShapeBomb {
		x := V("x", tensor.Float32, 1, 1, 2, 2)
		g := one(op, opset, []IO{x, V("scales", tensor.Float32, 4)})
		if op == "Resize" {
			g.Nodes[0].Inputs = []string{"x", "", "scales"}
		}
		if sizes {
			g = one(op, opset, []IO{x, V("sizes", tensor.Int64, 4)})
			g.Nodes[0].Inputs = []string{"x", "", "", "sizes"}
		}
		return ShapeBomb{Graph: g, Inputs: func(a, b, c int64, s float32) map[string]*tensor.Tensor {
			in := map[string]*tensor.Tensor{"x": floats([]int{1, 1, 2, 2}, 1)}
			if sizes {
				in["sizes"] = ints(1, 1, a, b)
			} else {
				in["scales"] = tensor.From([]int{4}, []float32{1, 1, s, float32(a)})
			}
			return in
		}}
	}
	// span is |v| held to [0, 2^16]: a count of elements a request sends.
	span := func(v int64) int {
		if v < 0 {
			v = -v
		}
		return int(min(max(v, 0), 1<<16))
	}
	bombs := map[string]ShapeBomb{
		"ConstantOfShape": {
			Graph: one("ConstantOfShape", 21, []IO{V("shape", tensor.Int64, 3)},
				&onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("value", tensor.From([]int{1}, []float32{1}))}),
			Inputs: func(a, b, c int64, _ float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"shape": ints(a, b, c)}
			},
		},
		"Expand": {
			Graph: one("Expand", 21, []IO{V("x", tensor.Float32, 1), V("shape", tensor.Int64, 3)}),
			Inputs: func(a, b, c int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{1}, s), "shape": ints(a, b, c)}
			},
		},
		"Tile": {
			Graph: one("Tile", 21, []IO{V("x", tensor.Float32, 2, 2), V("repeats", tensor.Int64, 2)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{2, 2}, s), "repeats": ints(a, b)}
			},
		},
		"Range": {
			Graph: Graph{Opset: 21, Inputs: []IO{V("start", tensor.Int64), V("limit", tensor.Int64), V("delta", tensor.Int64)},
				Outputs: []IO{{Name: "y", DType: tensor.Int64}},
				Nodes:   []Node{{Op: "Range", Inputs: []string{"start", "limit", "delta"}, Outputs: []string{"y"}}}},
			Inputs: func(a, b, c int64, _ float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"start": tensor.Scalar(a), "limit": tensor.Scalar(b), "delta": tensor.Scalar(c)}
			},
		},
		"Pad/constant":  pad("constant"),
		"Pad/edge":      pad("edge"),
		"Pad/reflect":   pad("reflect"),
		"Resize/sizes":  resize("Resize", 19, true),
		"Resize/scales": resize("Resize", 19, false),
		"Upsample":      resize("Upsample", 9, false),
		"OneHot": {
			Graph: one("OneHot", 21, []IO{V("indices", tensor.Int64, 2), V("depth", tensor.Int64, 1), V("values", tensor.Float32, 2)}),
			Inputs: func(a, _, c int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"indices": ints(c, 0), "depth": ints(a), "values": floats([]int{2}, s)}
			},
		},
		"Gather": {
			Graph: Graph{Opset: 21,
				Inputs:  []IO{V("i", tensor.Int64), V("n", tensor.Int64, 1)},
				Outputs: []IO{{Name: "y", DType: tensor.Float32}},
				Inits:   map[string]*tensor.Tensor{"data": floats([]int{2, 1 << 14}, 0)},
				Nodes: []Node{
					{Op: "Expand", Inputs: []string{"i", "n"}, Outputs: []string{"idx"}},
					{Op: "Gather", Inputs: []string{"data", "idx"}, Outputs: []string{"y"}},
				}},
			Inputs: func(a, b, _ int64, _ float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"i": tensor.Scalar(b), "n": ints(a)}
			},
		},
		"MatMul": {
			Graph: Graph{Opset: 21,
				Inputs:  []IO{V("x", tensor.Float32, 1), V("sa", tensor.Int64, 2), V("sb", tensor.Int64, 2)},
				Outputs: []IO{{Name: "y", DType: tensor.Float32}},
				Nodes: []Node{
					{Op: "Expand", Inputs: []string{"x", "sa"}, Outputs: []string{"a"}},
					{Op: "Expand", Inputs: []string{"x", "sb"}, Outputs: []string{"b"}},
					{Op: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}},
				}},
			Inputs: func(a, b, c int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{1}, s), "sa": ints(a, b), "sb": ints(b, c)}
			},
		},
		"Add": {
			Graph: one("Add", 21, []IO{V("p", tensor.Float32, -1, 1), V("q", tensor.Float32, 1, -1)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"p": floats([]int{span(a), 1}, s), "q": floats([]int{1, span(b)}, s)}
			},
		},
		"Where": {
			Graph: one("Where", 21, []IO{V("cond", tensor.Bool, -1, 1), V("p", tensor.Float32, 1, -1), V("q", tensor.Float32)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				cond := make([]bool, span(a))
				for i := range cond {
					cond[i] = i%2 == 0
				}
				return map[string]*tensor.Tensor{"cond": tensor.From([]int{len(cond), 1}, cond), "p": floats([]int{1, span(b)}, s), "q": tensor.Scalar(s)}
			},
		},
		"CenterCropPad": {
			Graph: one("CenterCropPad", 21, []IO{V("x", tensor.Float32, 2, 3), V("shape", tensor.Int64, 2)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{2, 3}, s), "shape": ints(a, b)}
			},
		},
		// Strides of 2^20 make one block cover an image of up to 2^20 x 2^20.
		"Col2Im": {
			Graph: one("Col2Im", 21, []IO{V("x", tensor.Float32, 1, 1, 1), V("image", tensor.Int64, 2), V("block", tensor.Int64, 2)},
				IntsAttr("strides", 1<<20, 1<<20)),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{1, 1, 1}, s), "image": ints(a, b), "block": ints(1, 1)}
			},
		},
		"AffineGrid": {
			Graph: one("AffineGrid", 21, []IO{V("theta", tensor.Float32, 1, 2, 3), V("size", tensor.Int64, 4)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"theta": floats([]int{1, 2, 3}, s), "size": ints(1, 1, a, b)}
			},
		},
		// a strings, the first of b commas: [a, b+1] substrings.
		"StringSplit": {
			Graph: Graph{Opset: 21, Inputs: []IO{V("x", tensor.String, -1)},
				Outputs: []IO{{Name: "y", DType: tensor.String}, {Name: "n", DType: tensor.Int64}},
				Nodes: []Node{{Op: "StringSplit", Inputs: []string{"x"}, Outputs: []string{"y", "n"},
					Attrs: []*onnxpb.Attribute{StringAttr("delimiter", ",")}}}},
			Inputs: func(a, b, _ int64, _ float32) map[string]*tensor.Tensor {
				x := make([]string, max(span(a), 1))
				x[0] = strings.Repeat(",", span(b))
				return map[string]*tensor.Tensor{"x": tensor.From([]int{len(x)}, x)}
			},
		},
		"Loop": {Graph: scanLoop(), Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"trips": tensor.Scalar(a), "x": floats([]int{min(span(b), 1<<12)}, s)}
		}},
		"DFT": {
			Graph: one("DFT", 20, []IO{V("x", tensor.Float32, -1, 4, 1), V("length", tensor.Int64)}),
			Inputs: func(a, b, _ int64, s float32) map[string]*tensor.Tensor {
				return map[string]*tensor.Tensor{"x": floats([]int{max(span(b), 1), 4, 1}, s), "length": tensor.Scalar(a)}
			},
		},
	}
	return bombs
}

// scanLoop is a Loop of a value-driven trip count whose body passes x on
// and stacks it as a scan output: y is [trips, len(x)].
func scanLoop() Graph {
	body := &onnxpb.Graph{
		Name:   "body",
		Inputs: []*onnxpb.ValueInfo{loopVI("i", onnxpb.Int64), loopVI("c", onnxpb.Bool), loopVI("v", onnxpb.Float)},
		Nodes: []*onnxpb.Node{
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{OpType: "Identity", Inputs: []string{"v"}, Outputs: []string{"v2"}},
			{OpType: "Identity", Inputs: []string{"v"}, Outputs: []string{"s"}},
		},
		Outputs: []*onnxpb.ValueInfo{loopVI("c2", onnxpb.Bool), loopVI("v2", onnxpb.Float), loopVI("s", onnxpb.Float)},
	}
	return Graph{
		Opset:   21,
		Inputs:  []IO{V("trips", tensor.Int64), V("x", tensor.Float32, -1)},
		Outputs: []IO{{Name: "last", DType: tensor.Float32}, {Name: "y", DType: tensor.Float32}},
		Nodes: []Node{{Op: "Loop", Inputs: []string{"trips", "", "x"}, Outputs: []string{"last", "y"},
			Attrs: []*onnxpb.Attribute{{Name: "body", Type: onnxpb.AttrGraph, G: body}}}},
	}
}

// loopVI is a body value of a Loop: a tensor of type dt, shape unknown.
func loopVI(name string, dt onnxpb.DataType) *onnxpb.ValueInfo {
	return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: dt}}
}
