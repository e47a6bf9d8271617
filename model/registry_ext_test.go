package model_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/activation"
	"github.com/quantserve/quantserve/tensor"
)

func loadGraph(t *testing.T, g onnxbuild.Graph) (*model.Model, error) {
	t.Helper()
	return model.Load(g.Bytes())
}

func unary(op string, opset int64, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	return onnxbuild.Graph{
		Opset:   opset,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 2)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 2)},
		Nodes:   []onnxbuild.Node{{Op: op, Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: attrs}},
	}
}

func TestOpsetRanges(t *testing.T) {
	for _, c := range []struct {
		g    onnxbuild.Graph
		want string
	}{
		{unary("Gelu", 17), "node Gelu_a (Gelu, opset 17): model: unsupported: operator Gelu at opset 17 (implemented for opsets 20–27)"},
		{unary("Relu", model.MaxOpset+1), "operator Relu at opset 28 (implemented for opsets 1–27)"},
		{unary("Relu", 13, onnxbuild.IntAttr("alpha", 1)), `node Relu_a (Relu, opset 13): model: unsupported: attribute "alpha"`},
		{unary("LeakyRelu", 13, onnxbuild.IntAttr("alpha", 1)), `attribute "alpha": has type INT, want FLOAT`},
	} {
		_, err := loadGraph(t, c.g)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at opset %d: error %v, want it to contain %q", c.g.Nodes[0].Op, c.g.Opset, err, c.want)
		}
		if err != nil && !strings.Contains(c.want, "want FLOAT") && !errors.Is(err, model.ErrUnsupported) {
			t.Errorf("%v is not model.ErrUnsupported", err)
		}
	}
	// Clip has two implementations, chosen by opset: bounds as attributes
	// before 11, as inputs from 11 on.
	clips := model.Descriptors("", "Clip")
	if len(clips) != 2 {
		t.Fatalf("%d Clip descriptors, want 2", len(clips))
	}
	for i, opset := range []int64{10, 11} {
		m, err := loadGraph(t, unary("Clip", opset))
		if err != nil {
			t.Fatal(err)
		}
		st := m.Steps()[0]
		if st.Desc != clips[i] {
			t.Errorf("Clip at opset %d ran %v, want %v", opset, st.Desc, clips[i])
		}
		if _, legacy := st.Params.(*activation.ClipAttrs); legacy != (opset < 11) {
			t.Errorf("Clip at opset %d parsed %T", opset, st.Params)
		}
	}
}

func TestAttributeDefaults(t *testing.T) {
	m, err := loadGraph(t, unary("LeakyRelu", 16))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Steps()[0].Params.(*activation.LeakyReluAttrs).Alpha; a != 0.01 {
		t.Errorf("default alpha %v, want 0.01", a)
	}
	m, err = loadGraph(t, unary("LeakyRelu", 16, &onnxpb.Attribute{Name: "alpha", Type: onnxpb.AttrFloat, F: 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Steps()[0].Params.(*activation.LeakyReluAttrs).Alpha; a != 0.5 {
		t.Errorf("alpha %v, want 0.5", a)
	}
}

func TestConstantsFoldAtLoad(t *testing.T) {
	g := onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 2)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 2)},
		Inits:   map[string]*tensor.Tensor{"a": tensor.From([]int{2}, []float32{1, 2}), "b": tensor.From([]int{2}, []float32{10, 20})},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"ab"}},
			{Op: "Mul", Inputs: []string{"ab", "ab"}, Outputs: []string{"sq"}},
			{Op: "Add", Inputs: []string{"x", "sq"}, Outputs: []string{"y"}},
		},
	}
	m, err := loadGraph(t, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps()) != 1 {
		t.Errorf("%d steps run per request, want 1 (the constant nodes fold)", len(m.Steps()))
	}
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.From([]int{2}, []float32{1, 1})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out["y"].Data.([]float32); got[0] != 122 || got[1] != 485 {
		t.Errorf("y = %v, want [122 485]", got)
	}
}

// TestSubgraphsReadOuterValues runs an If whose branches read a value the
// main graph computes per request, one of them through a nested If.
func TestSubgraphsReadOuterValues(t *testing.T) {
	graph := func(name string, nodes ...*onnxpb.Node) *onnxpb.Graph {
		return &onnxpb.Graph{Name: name, Nodes: nodes, Outputs: []*onnxpb.ValueInfo{{Name: nodes[len(nodes)-1].Outputs[0], Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}}}
	}
	// then: x2 + x2 ; else: If(inner) { x2 · x2 } else { x2 }
	then := graph("then", &onnxpb.Node{OpType: "Add", Inputs: []string{"x2", "x2"}, Outputs: []string{"t"}})
	innerThen := graph("it", &onnxpb.Node{OpType: "Mul", Inputs: []string{"x2", "x2"}, Outputs: []string{"it_out"}})
	innerElse := graph("ie", &onnxpb.Node{OpType: "Identity", Inputs: []string{"x2"}, Outputs: []string{"ie_out"}})
	els := graph("else", &onnxpb.Node{OpType: "If", Inputs: []string{"inner"}, Outputs: []string{"e"}, Attributes: []*onnxpb.Attribute{
		{Name: "then_branch", Type: onnxpb.AttrGraph, G: innerThen},
		{Name: "else_branch", Type: onnxpb.AttrGraph, G: innerElse},
	}})
	g := onnxbuild.Graph{
		Inputs: []onnxbuild.IO{
			onnxbuild.V("x", tensor.Float32, 2), onnxbuild.V("cond", tensor.Bool), onnxbuild.V("inner", tensor.Bool),
		},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 2)},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"x2"}},
			{Op: "If", Inputs: []string{"cond"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{
				{Name: "then_branch", Type: onnxpb.AttrGraph, G: then},
				{Name: "else_branch", Type: onnxpb.AttrGraph, G: els},
			}},
		},
	}
	m, err := loadGraph(t, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cond, inner bool
		want        float32 // for x = 3
	}{{true, false, 12}, {false, true, 36}, {false, false, 6}} {
		out, err := m.Run(context.Background(), map[string]*tensor.Tensor{
			"x": tensor.From([]int{2}, []float32{3, 3}), "cond": tensor.Scalar(c.cond), "inner": tensor.Scalar(c.inner),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["y"].Data.([]float32); got[0] != c.want || got[1] != c.want {
			t.Errorf("cond=%v inner=%v: y = %v, want %v", c.cond, c.inner, got, c.want)
		}
	}
}
