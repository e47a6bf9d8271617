package model_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// Models of the ai.onnx.ml domain as the compiler sees them: the domains
// a model imports, and nodes of both domains in one graph. The operators
// themselves are tested in package ops/ml.

const mlDomain = "ai.onnx.ml"

// A model importing only ai.onnx.ml loads; an ai.onnx node in it is
// refused for its domain.
func TestMLOnlyModelDomains(t *testing.T) {
	b := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Domain: mlDomain, Version: 1}},
		Graph: &onnxpb.Graph{Nodes: []*onnxpb.Node{{OpType: "Binarizer", Domain: mlDomain, Inputs: []string{"X"}, Outputs: []string{"Y"}}},
			Inputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("X", tensor.Float32, 2))}, Outputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("Y", tensor.Float32, 2))}}})
	m, err := model.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2}, []float32{-1, 1})})["Y"]; !mlClose(y, []float64{0, 1}, 0) {
		t.Errorf("Binarizer: %v", y.Data)
	}
	b = onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Domain: mlDomain, Version: 1}},
		Graph: &onnxpb.Graph{Nodes: []*onnxpb.Node{{OpType: "Relu", Inputs: []string{"X"}, Outputs: []string{"Y"}}},
			Inputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("X", tensor.Float32, 2))}, Outputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("Y", tensor.Float32, 2))}}})
	if _, err := model.Load(b); !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "imports no opset") {
		t.Errorf("ai.onnx node without an ai.onnx import: %v", err)
	}
}

// A scikit-learn style pipeline: imputer, scaler and classifier from
// ai.onnx.ml, an ai.onnx node after them, both domains imported.
func TestMLPipeline(t *testing.T) {
	nodes := []*onnxpb.Node{
		mlNode("Imputer", []string{"X"}, []string{"imputed"}, mlFloats("imputed_value_floats", 0, 1, 2), mlFloat("replaced_value_float", float32(math.NaN()))),
		mlNode("Scaler", []string{"imputed"}, []string{"scaled"}, mlFloats("offset", 1, 1, 1), mlFloats("scale", 1, 2, 3)),
		mlNode("LinearClassifier", []string{"scaled"}, []string{"label", "scores"}, mlFloats("coefficients", 1, 0, 0, 0, 1, 0, 0, 0, 1),
			mlFloats("intercepts", 0, 0, 0), mlStrs("classlabels_strings", "a", "b", "c")),
		{OpType: "Identity", Domain: "ai.onnx", Inputs: []string{"scores"}, Outputs: []string{"probabilities"}},
	}
	b := mlModelBytes(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 3)}, []mlIO{mlV("label", tensor.String, -1), mlV("probabilities", tensor.Float32, -1, 3)}, nil, nodes...)
	m, err := model.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	// [NaN, 2, 1] → imputed [0, 2, 1] → scaled [−1, 2, 0]; [4, 0, 2] →
	// [3, −2, 3]: the first of two equal scores wins.
	out := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 3}, []float32{float32(math.NaN()), 2, 1, 4, 0, 2})})
	if got := out["label"].Data.([]string); strings.Join(got, ",") != "b,a" || !mlClose(out["probabilities"], []float64{-1, 2, 0, 3, -2, 3}, 1e-6) {
		t.Errorf("got %v %v", got, out["probabilities"].Data)
	}
}

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

func mlFloat(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
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
