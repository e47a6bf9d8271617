//go:build autodiff

package autodiff

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// chain is a graph x -> ops[0] -> ... -> ops[len-1] = y over one input of
// the given shape; an op written "Mul k" multiplies by the initializer k
// (0.9) and "Add c" adds c (1.2), which keep later functions within their
// domains.
func chain(opset int64, shape []int, ops []string, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	g := onnxbuild.Graph{
		Opset:   opset,
		Inputs:  []onnxbuild.IO{v("x", shape...)},
		Outputs: []onnxbuild.IO{v("y", shape...)},
		Inits:   map[string]*tensor.Tensor{"k": tensor.Scalar(float32(0.9)), "c": tensor.Scalar(float32(1.2))},
	}
	prev := "x"
	for i, op := range ops {
		out := "t" + string(rune('a'+i))
		if i == len(ops)-1 {
			out = "y"
		}
		n := onnxbuild.Node{Op: op, Inputs: []string{prev}, Outputs: []string{out}}
		switch op {
		case "Mul k":
			n.Op, n.Inputs = "Mul", []string{prev, "k"}
		case "Add c":
			n.Op, n.Inputs = "Add", []string{prev, "c"}
		}
		if i == len(ops)-1 {
			n.Attrs = attrs
		}
		g.Nodes = append(g.Nodes, n)
		prev = out
	}
	return g
}

func elementwiseGradCases() []gradCase {
	s := []int{3, 4}
	var cases []gradCase
	for _, op := range []string{"Exp", "Neg", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Asinh", "Erf", "Softplus", "Softsign", "Dropout"} {
		cases = append(cases, gradCase{name: op, g: chain(13, s, []string{op})})
	}
	for _, c := range []struct {
		name   string
		opset  int64
		ops    []string
		attrs  []*onnxpb.Attribute
		avoid0 bool
	}{
		{"Abs", 13, []string{"Abs"}, nil, true},
		{"Sqrt", 13, []string{"Exp", "Sqrt"}, nil, false},
		{"Log", 13, []string{"Softplus", "Log"}, nil, false},
		{"Reciprocal", 13, []string{"Exp", "Reciprocal"}, nil, false},
		{"Tan", 13, []string{"Tanh", "Tan"}, nil, false},
		{"Asin", 13, []string{"Tanh", "Mul k", "Asin"}, nil, false},
		{"Acos", 13, []string{"Tanh", "Mul k", "Acos"}, nil, false},
		{"Atanh", 13, []string{"Tanh", "Mul k", "Atanh"}, nil, false},
		{"Acosh", 13, []string{"Exp", "Add c", "Acosh"}, nil, false},
		{"Mish", 18, []string{"Mish"}, nil, false},
		{"HardSwish", 14, []string{"HardSwish"}, nil, false},
		{"HardSigmoid", 13, []string{"HardSigmoid"}, []*onnxpb.Attribute{flt("alpha", 0.3), flt("beta", 0.6)}, false},
		{"Selu", 13, []string{"Selu"}, nil, true},
		{"Elu", 13, []string{"Elu"}, []*onnxpb.Attribute{flt("alpha", 0.7)}, true},
		{"Celu", 13, []string{"Celu"}, []*onnxpb.Attribute{flt("alpha", 1.5)}, true},
		{"ThresholdedRelu", 13, []string{"ThresholdedRelu"}, []*onnxpb.Attribute{flt("alpha", 0.05)}, true},
		{"Shrink (soft)", 13, []string{"Shrink"}, []*onnxpb.Attribute{flt("lambd", 0.05), flt("bias", 0.05)}, true},
		{"Swish", 24, []string{"Swish"}, []*onnxpb.Attribute{flt("alpha", 0.8)}, false},
	} {
		cases = append(cases, gradCase{name: c.name, avoid0: c.avoid0, g: chain(c.opset, s, c.ops, c.attrs...)})
	}
	cases = append(cases,
		gradCase{name: "PRelu per channel", avoid0: true, g: one("PRelu", []onnxbuild.IO{v("x", 2, 3, 4), v("slope", 3, 1)}, v("", 2, 3, 4))},
		gradCase{name: "PRelu initializer slope", avoid0: true, wrt: []string{"slope"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 4)}, Outputs: []onnxbuild.IO{v("y", 2, 4)},
			Nodes: []onnxbuild.Node{node("PRelu", []string{"x", "slope"})},
			Inits: map[string]*tensor.Tensor{"slope": tensor.From([]int{4}, []float32{0.1, -0.3, 0.25, 2})}}},
		gradCase{name: "Pow both operands", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("a", 2, 3), v("b", 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3)},
			Nodes: []onnxbuild.Node{{Op: "Exp", Inputs: []string{"a"}, Outputs: []string{"e"}}, node("Pow", []string{"e", "b"})}}},
		gradCase{name: "Pow integer exponent", g: onnxbuild.Graph{
			Opset:  15,
			Inputs: []onnxbuild.IO{v("x", 2, 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3)},
			Nodes: []onnxbuild.Node{node("Pow", []string{"x", "p"})},
			Inits: map[string]*tensor.Tensor{"p": tensor.From([]int{3}, []int64{1, 2, 3})}}},
		gradCase{name: "Where", avoid0: true, g: onnxbuild.Graph{
			Opset:  16,
			Inputs: []onnxbuild.IO{v("c", 2, 3), v("a", 2, 3), v("b", 3)}, Outputs: []onnxbuild.IO{v("y", 2, 3)},
			Nodes: []onnxbuild.Node{{Op: "Less", Inputs: []string{"c", "zero"}, Outputs: []string{"cond"}}, node("Where", []string{"cond", "a", "b"})},
			Inits: map[string]*tensor.Tensor{"zero": tensor.Scalar(float32(0))}}},
	)
	for _, op := range []string{"Sum", "Mean", "Min", "Max"} {
		cases = append(cases, gradCase{name: op + " broadcast", g: one(op, []onnxbuild.IO{v("a", 2, 3), v("b", 3), v("c", 2, 1)}, v("", 2, 3))})
	}
	return cases
}

// TestElementwiseGradients checks the backward of each activation and
// elementwise function against central differences.
func TestElementwiseGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	checkGradients(t, r, elementwiseGradCases())
}

// TestPiecewiseConstantGradients: Ceil, Floor, Round and Sign pass a zero
// gradient (their derivative wherever they have one), not an error.
func TestPiecewiseConstantGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, op := range []string{"Ceil", "Floor", "Round", "Sign"} {
		g := onnxbuild.Graph{
			Opset:  22,
			Inputs: []onnxbuild.IO{v("x", 5)}, Outputs: []onnxbuild.IO{v("y", 5)},
			Nodes: []onnxbuild.Node{{Op: op, Inputs: []string{"x"}, Outputs: []string{"r"}}, node("Add", []string{"r", "x"})},
		}
		m, err := model.Load(g.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		x := randT(r, []int{5}, true)
		_, grads, err := Gradients(context.Background(), m, GradRequest{Inputs: map[string]*tensor.Tensor{"x": x}})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		for i, v := range grads[0].Tensor.Data.([]float32) {
			if v != 1 { // through Add only
				t.Errorf("%s: d/dx[%d] = %v, want 1", op, i, v)
			}
		}
	}
}
