package model

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// build makes a one-node model over FP32 inputs of unknown shape.
func build(t *testing.T, opset int64, op string, inputs []string, attrs []*onnxpb.Attribute, inits ...*onnxpb.Tensor) *Model {
	t.Helper()
	g := &onnxpb.Graph{Initializers: inits}
	for _, in := range inputs {
		isInit := slices.ContainsFunc(inits, func(p *onnxpb.Tensor) bool { return p.Name == in })
		if !isInit {
			g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: in, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}})
		}
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: inputs, Outputs: []string{"y"}, Attributes: attrs}}
	g.Outputs = []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run1(t *testing.T, m *Model, in map[string]*tensor.Tensor) (*tensor.Tensor, error) {
	t.Helper()
	out, err := m.Run(context.Background(), in, nil)
	if err != nil {
		return nil, err
	}
	return out["y"], nil
}

func TestUnsupportedOpNamesNodeOpAndOpset(t *testing.T) {
	g := &onnxpb.Graph{
		Inputs:  []*onnxpb.ValueInfo{{Name: "x", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
		Nodes:   []*onnxpb.Node{{OpType: "NotAnOperator", Name: "conv1", Inputs: []string{"x"}, Outputs: []string{"y"}}},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Float}}},
	}
	_, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 17}}, Graph: g}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "node conv1 (NotAnOperator, opset 17)") {
		t.Errorf("error %v", err)
	}
	_, err = Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 3, OpsetImport: []onnxpb.OpsetID{{Version: 6}}, Graph: g}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "opset 6") {
		t.Errorf("old opset: %v", err)
	}
	for _, garbage := range [][]byte{nil, {0xff, 0xff}, []byte("hello world")} {
		if _, err := Load(garbage); err == nil {
			t.Errorf("Load(%q) succeeded", garbage)
		}
	}
}

func TestBroadcastAndErrors(t *testing.T) {
	m := build(t, 13, "Add", []string{"a", "b"}, nil)
	a := tensor.From([]int{2, 1, 3}, []float32{1, 2, 3, 4, 5, 6})
	b := tensor.From([]int{2, 1}, []float32{10, 20})
	y, err := run1(t, m, map[string]*tensor.Tensor{"a": a, "b": b})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26}
	if !slices.Equal(y.Shape, []int{2, 2, 3}) || !slices.Equal(y.Data.([]float32), want) {
		t.Errorf("got %v %v", y.Shape, y.Data)
	}
	_, err = run1(t, m, map[string]*tensor.Tensor{"a": a, "b": tensor.From([]int{4}, []float32{1, 2, 3, 4})})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "cannot be broadcast") {
		t.Errorf("bad broadcast: %v", err)
	}
	if a.Data.([]float32)[0] != 1 {
		t.Error("input modified")
	}
}

func TestIntegerDivisionByZeroIsAnError(t *testing.T) {
	g := &onnxpb.Graph{
		Inputs: []*onnxpb.ValueInfo{
			{Name: "a", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Int32}},
			{Name: "b", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Int32}},
		},
		Nodes:   []*onnxpb.Node{{OpType: "Div", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}},
		Outputs: []*onnxpb.ValueInfo{{Name: "y", Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: onnxpb.Int32}}},
	}
	m, err := Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: 14}}, Graph: g}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Run(context.Background(), map[string]*tensor.Tensor{
		"a": tensor.From([]int{2}, []int32{1, 2}), "b": tensor.From([]int{2}, []int32{1, 0}),
	}, nil)
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("error %v", err)
	}
}

func TestRunChecksContext(t *testing.T) {
	m := build(t, 13, "Relu", []string{"x"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Run(ctx, map[string]*tensor.Tensor{"x": tensor.From([]int{1}, []float32{1})}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

func TestGemmWithConstantTransposedB(t *testing.T) {
	w := TensorToONNX("w", tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})) // [N=2, K=3]
	c := TensorToONNX("c", tensor.From([]int{2}, []float32{100, 200}))
	m := build(t, 13, "Gemm", []string{"x", "w", "c"}, []*onnxpb.Attribute{
		{Name: "transB", Type: onnxpb.AttrInt, I: 1}, {Name: "alpha", Type: onnxpb.AttrFloat, F: 2}, {Name: "beta", Type: onnxpb.AttrFloat, F: 0.5},
	}, w, c)
	y, err := run1(t, m, map[string]*tensor.Tensor{"x": tensor.From([]int{1, 3}, []float32{1, 1, 1})})
	if err != nil {
		t.Fatal(err)
	}
	// x·wᵀ = [6, 15]; 2·that + 0.5·c = [62, 130]
	if !slices.Equal(y.Data.([]float32), []float32{62, 130}) {
		t.Errorf("got %v", y.Data)
	}
}
