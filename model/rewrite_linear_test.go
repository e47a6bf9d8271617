package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestLinearRewrite: MatMul by a constant weight followed by a bias Add,
// an activation and a residual Add (in each combination the rewrite
// takes, and some it leaves alone or takes only in part) computes what
// the graph as written does, in float32 and with int8 weights, and the
// steps the rewrite leaves are the ones expected.
func TestLinearRewrite(t *testing.T) {
	const m, k, n = 5, 96, 100 // k·n past MinQuantizedWeights: int8 kernels when quantizing
	r := rand.New(rand.NewPCG(1, 2))
	inits := map[string]*tensor.Tensor{
		"w": randFloats(r, 1, k, n), "bias": randFloats(r, 1, n), "wide_bias": randFloats(r, 1, m, n), "row": randFloats(r, 1, n),
	}
	approx := &onnxpb.Attribute{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}
	node := func(op string, in ...string) onnxbuild.Node {
		return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{op + "_" + in[0]}}
	}
	for _, c := range []struct {
		name  string
		nodes []onnxbuild.Node
		steps []string // the ops the rewritten graph runs
	}{
		{"bias", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias")}, []string{"Linear"}},
		{"bias first", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "bias", "MatMul_x")}, []string{"Linear"}},
		{"bias gelu", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Gelu", "Add_MatMul_x")}, []string{"Linear"}},
		{"bias relu residual", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Relu", "Add_MatMul_x"), node("Add", "r", "Relu_Add_MatMul_x")}, []string{"Linear"}},
		{"bias residual", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Add", "Add_MatMul_x", "r")}, []string{"Linear"}},
		{"gelu", []onnxbuild.Node{node("MatMul", "x", "w"), node("Gelu", "MatMul_x")}, []string{"Linear"}},
		{"residual", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "r")}, []string{"Linear"}},
		{"broadcast residual", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Add", "Add_MatMul_x", "rrow")}, []string{"Linear"}},
		{"wide bias", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "wide_bias")}, []string{"MatMul", "Add"}},
		{"tanh gelu", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"),
			{Op: "Gelu", Inputs: []string{"Add_MatMul_x"}, Outputs: []string{"Gelu_Add_MatMul_x"}, Attrs: []*onnxpb.Attribute{approx}}}, []string{"Linear"}},
		{"bias silu", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Sigmoid", "Add_MatMul_x"),
			node("Mul", "Add_MatMul_x", "Sigmoid_Add_MatMul_x")}, []string{"Linear"}},
		{"silu, the sigmoid first, residual", []onnxbuild.Node{node("MatMul", "x", "w"), node("Sigmoid", "MatMul_x"),
			node("Mul", "Sigmoid_MatMul_x", "MatMul_x"), node("Add", "Mul_Sigmoid_MatMul_x", "r")}, []string{"Linear"}},
		{"silu, the sigmoid read twice", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Sigmoid", "Add_MatMul_x"),
			node("Mul", "Add_MatMul_x", "Sigmoid_Add_MatMul_x"), node("Add", "Sigmoid_Add_MatMul_x", "Mul_Add_MatMul_x")}, []string{"Linear", "Sigmoid", "Mul", "Add"}},
		{"a sigmoid times another value", []onnxbuild.Node{node("MatMul", "x", "w"), node("Add", "MatMul_x", "bias"), node("Sigmoid", "Add_MatMul_x"),
			node("Mul", "r", "Sigmoid_Add_MatMul_x"), node("Add", "Mul_r", "Add_MatMul_x")}, []string{"Linear", "Sigmoid", "Mul", "Add"}},
		{"activation weight", []onnxbuild.Node{node("MatMul", "x", "r2"), node("Add", "MatMul_x", "bias")}, []string{"MatMul", "Add"}},
	} {
		last := c.nodes[len(c.nodes)-1]
		last.Outputs = []string{"y"}
		c.nodes[len(c.nodes)-1] = last
		g := onnxbuild.Graph{
			Opset: 20,
			Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, m, k), onnxbuild.V("r", tensor.Float32, m, n),
				onnxbuild.V("rrow", tensor.Float32, n), onnxbuild.V("r2", tensor.Float32, k, n)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)},
			Nodes:   c.nodes,
			Inits:   inits,
		}
		in := map[string]*tensor.Tensor{"x": randFloats(r, 1, m, k), "r": randFloats(r, 1, m, n), "rrow": randFloats(r, 1, n), "r2": randFloats(r, 1, k, n)}
		checkRewritten(t, c.name, g.Bytes(), in, c.steps)
	}
}

// checkRewritten loads a model twice, with and without rewrites, in
// float32 and with int8 weights: the rewritten one runs steps (their
// ops, in order), and each computes what the graph as written does on
// in, within 1e-5 relative, at output "y".
func checkRewritten(t *testing.T, name string, data []byte, in map[string]*tensor.Tensor, steps []string) {
	t.Helper()
	for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
		var outs [2][]float32
		for i, unrewritten := range []bool{false, true} {
			o := opts
			o.Unrewritten = unrewritten
			mod, err := model.LoadWith(data, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !unrewritten {
				var ops []string
				for _, s := range mod.Steps() {
					ops = append(ops, s.Op)
				}
				if !slices.Equal(ops, steps) {
					t.Errorf("%s: steps %v, want %v", name, ops, steps)
				}
			}
			res, err := mod.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			outs[i] = res["y"].Data.([]float32)
		}
		for j := range outs[1] {
			if d := math.Abs(float64(outs[0][j] - outs[1][j])); d > 1e-5*(1+math.Abs(float64(outs[1][j]))) {
				t.Errorf("%s (quantize %v): y[%d] = %v, as written %v", name, opts.Quantize, j, outs[0][j], outs[1][j])
				break
			}
		}
	}
}

// TestGemmLinearRewrite: a Gemm as exporters write a fully connected
// layer (alpha and beta 1, B constant, transposed or not, a bias C of
// shape [N]) runs as a Linear with the bias, and a Relu after it, in the
// product's finish, with the bits of the graph as written, in float32
// and with int8 weights; the model's layers still name it a Gemm. A
// Gemm of another alpha or beta, or a C of another shape, stays a Gemm.
func TestGemmLinearRewrite(t *testing.T) {
	const m, k, n = 3, 96, 100 // k·n past MinQuantizedWeights: int8 kernels when quantizing
	r := rand.New(rand.NewPCG(3, 4))
	inits := map[string]*tensor.Tensor{"w": randFloats(r, 1, k, n), "wt": randFloats(r, 1, n, k), "c": randFloats(r, 1, n), "c2": randFloats(r, 1, 1, n)}
	attr := func(name string, f float32, i int64) *onnxpb.Attribute {
		if name == "transB" || name == "transA" {
			return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: i}
		}
		return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
	}
	for _, c := range []struct {
		name  string
		in    []string
		attrs []*onnxpb.Attribute
		relu  bool
		steps []string
	}{
		{"transB, bias, relu", []string{"x", "wt", "c"}, []*onnxpb.Attribute{attr("transB", 0, 1)}, true, []string{"Linear"}},
		{"transB, bias", []string{"x", "wt", "c"}, []*onnxpb.Attribute{attr("transB", 0, 1), attr("alpha", 1, 0), attr("beta", 1, 0)}, false, []string{"Linear"}},
		{"bias", []string{"x", "w", "c"}, nil, false, []string{"Linear"}},
		{"no bias, relu", []string{"x", "w"}, nil, true, []string{"Linear"}},
		{"no bias", []string{"x", "w"}, nil, false, []string{"Gemm"}},
		{"alpha 2", []string{"x", "w", "c"}, []*onnxpb.Attribute{attr("alpha", 2, 0)}, true, []string{"Gemm", "Relu"}},
		{"beta 0.5", []string{"x", "w", "c"}, []*onnxpb.Attribute{attr("beta", 0.5, 0)}, false, []string{"Gemm"}},
		{"bias [1, N]", []string{"x", "w", "c2"}, nil, false, []string{"Gemm"}},
	} {
		nodes := []onnxbuild.Node{{Op: "Gemm", Inputs: c.in, Outputs: []string{"y"}, Attrs: c.attrs}}
		if c.relu {
			nodes[0].Outputs = []string{"g"}
			nodes = append(nodes, onnxbuild.Node{Op: "Relu", Inputs: []string{"g"}, Outputs: []string{"y"}})
		}
		data := onnxbuild.Graph{Opset: 17, Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, m, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, m, n)}, Nodes: nodes, Inits: inits}.Bytes()
		in := map[string]*tensor.Tensor{"x": randFloats(r, 1, m, k)}
		for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
			var outs [2][]float32
			for i, unrewritten := range []bool{false, true} {
				opts.Unrewritten = unrewritten
				mod, err := model.LoadWith(data, opts)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if !unrewritten {
					var ops []string
					for _, s := range mod.Steps() {
						ops = append(ops, s.Op)
					}
					if !slices.Equal(ops, c.steps) {
						t.Errorf("%s: steps %v, want %v", c.name, ops, c.steps)
					}
					if len(mod.Layers) != 1 || mod.Layers[0].Op != "Gemm" || mod.Layers[0].K != k || mod.Layers[0].N != n {
						t.Errorf("%s: layers %+v, want the Gemm of %d×%d", c.name, mod.Layers, k, n)
					}
				}
				res, err := mod.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				outs[i] = res["y"].Data.([]float32)
			}
			if !slices.EqualFunc(outs[0], outs[1], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("%s (quantize %v): the rewritten graph's values differ from the graph's", c.name, opts.Quantize)
			}

		}
	}
	// A graph whose A is not 2-D: Gemm refuses it, rewritten or not.
	nodes := []onnxbuild.Node{{Op: "Gemm", Inputs: []string{"x", "wt", "c"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{attr("transB", 0, 1)}}}
	data := onnxbuild.Graph{Opset: 17, Inputs: []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, 1, m, k)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, 1, m, n)}, Nodes: nodes, Inits: inits}.Bytes()
	for _, unrewritten := range []bool{false, true} {
		mod, err := model.LoadWith(data, model.Options{Unrewritten: unrewritten})
		if err != nil {
			t.Fatal(err)
		}
		if got := mod.Steps()[0].Op; got != map[bool]string{false: "Linear", true: "Gemm"}[unrewritten] {
			t.Errorf("a 3-D A, unrewritten %v: the step is a %s", unrewritten, got)
		}
		in := map[string]*tensor.Tensor{"x": randFloats(r, 1, 1, m, k)}
		if _, err := mod.Run(context.Background(), in, nil); err == nil || !strings.Contains(err.Error(), "Gemm takes a 2-D A") {
			t.Errorf("a 3-D A, unrewritten %v: %v, want Gemm's refusal", unrewritten, err)
		}
	}
}
