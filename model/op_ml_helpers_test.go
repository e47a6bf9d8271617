package model_test

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Test models of one node of a non-default domain (ai.onnx.ml,
// ai.onnx.preview.training), built with onnxpb directly: the model
// imports that domain's opset and ai.onnx 13, as exporters write them.

type mlIO struct {
	name  string
	dtype tensor.DataType
	shape []int // nil: unknown rank; -1: dynamic
}

func mlV(name string, dt tensor.DataType, shape ...int) mlIO { return mlIO{name, dt, shape} }

func mlValueInfo(io mlIO) *onnxpb.ValueInfo {
	t := &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: model.DataTypeToONNX(io.dtype), HasShape: io.shape != nil}
	for _, d := range io.shape {
		if d < 0 {
			t.Shape = append(t.Shape, onnxpb.Dim{Param: "N"})
		} else {
			t.Shape = append(t.Shape, onnxpb.Dim{Value: int64(d), HasValue: true})
		}
	}
	return &onnxpb.ValueInfo{Name: io.name, Type: t}
}

// mlModelBytes encodes a model of the nodes, which belong to domain at
// opset; inits are initializers.
func mlModelBytes(domain string, opset int64, inputs, outputs []mlIO, inits map[string]*tensor.Tensor, nodes ...*onnxpb.Node) []byte {
	g := &onnxpb.Graph{Name: "ml"}
	for i, n := range nodes {
		if n.Domain == "" {
			n.Domain = domain
		}
		if n.Name == "" {
			n.Name = n.OpType + "_" + string(rune('a'+i))
		}
		g.Nodes = append(g.Nodes, n)
	}
	for name, t := range inits {
		g.Initializers = append(g.Initializers, model.TensorToONNX(name, t))
	}
	for _, io := range inputs {
		g.Inputs = append(g.Inputs, mlValueInfo(io))
	}
	for _, io := range outputs {
		g.Outputs = append(g.Outputs, mlValueInfo(io))
	}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, Graph: g,
		OpsetImport: []onnxpb.OpsetID{{Version: 13}, {Domain: domain, Version: opset}}})
}

func mlLoad(domain string, opset int64, inputs, outputs []mlIO, nodes ...*onnxpb.Node) (*model.Model, error) {
	return model.Load(mlModelBytes(domain, opset, inputs, outputs, nil, nodes...))
}

func mlMustLoad(t *testing.T, domain string, opset int64, inputs, outputs []mlIO, nodes ...*onnxpb.Node) *model.Model {
	t.Helper()
	m, err := mlLoad(domain, opset, inputs, outputs, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mlRun(t *testing.T, m *model.Model, in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	out, err := m.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mlNode(op string, in, out []string, attrs ...*onnxpb.Attribute) *onnxpb.Node {
	return &onnxpb.Node{OpType: op, Inputs: in, Outputs: out, Attributes: attrs}
}

func mlInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func mlFloat(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

func mlStr(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

func mlInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func mlFloats(name string, v ...float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloats, Floats: v}
}

func mlStrs(name string, v ...string) *onnxpb.Attribute {
	a := &onnxpb.Attribute{Name: name, Type: onnxpb.AttrStrings}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}

func mlTensor(name string, t *tensor.Tensor) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrTensor, T: model.TensorToONNX(name, t)}
}

// mlClose reports whether got and want (float tensors) agree within tol,
// relative to max(1, |want|).
func mlClose(got *tensor.Tensor, want []float64, tol float64) bool {
	g := got.Float64s()
	if len(g) != len(want) {
		return false
	}
	for i := range g {
		d := g[i] - want[i]
		if d < 0 {
			d = -d
		}
		w := want[i]
		if w < 0 {
			w = -w
		}
		if !(d <= tol*max(1, w)) {
			return false
		}
	}
	return true
}
