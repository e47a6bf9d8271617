//go:build autodiff

package autodiff

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

type gradCase struct {
	name   string
	g      onnxbuild.Graph
	wrt    []string // extra (initializers); inputs are always checked
	avoid0 bool     // keep inputs away from 0 (kinks at 0)
}

func v(name string, shape ...int) onnxbuild.IO { return onnxbuild.V(name, tensor.Float32, shape...) }

func node(op string, in []string, attrs ...*onnxpb.Attribute) onnxbuild.Node {
	return onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{"y"}, Attrs: attrs}
}

func ints(name string, vals ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: vals}
}

func flt(name string, f float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: f}
}

func str(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func randT(r *rand.Rand, shape []int, avoid0 bool) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if avoid0 && math.Abs(float64(x[i])) < 0.1 {
			x[i] += 0.3
		}
	}
	return tensor.From(shape, x)
}

func one(op string, in []onnxbuild.IO, out onnxbuild.IO, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	names := make([]string, len(in))
	for i, io := range in {
		names[i] = io.Name
	}
	out.Name = "y"
	return onnxbuild.Graph{Inputs: in, Outputs: []onnxbuild.IO{out}, Nodes: []onnxbuild.Node{node(op, names, attrs...)}}
}

func gradCases(r *rand.Rand) []gradCase {
	w := randT(r, []int{6, 5}, false)
	bias := randT(r, []int{5}, false)
	cases := []gradCase{
		{name: "MatMul", g: one("MatMul", []onnxbuild.IO{v("a", 3, 4), v("b", 4, 5)}, v("", 3, 5))},
		{name: "MatMul batched", g: one("MatMul", []onnxbuild.IO{v("a", 2, 3, 4), v("b", 2, 4, 5)}, v("", 2, 3, 5))},
		{name: "MatMul 3-D by 2-D", g: one("MatMul", []onnxbuild.IO{v("a", 2, 3, 4), v("b", 4, 5)}, v("", 2, 3, 5))},
		{name: "Gemm", g: one("Gemm", []onnxbuild.IO{v("a", 4, 3), v("b", 5, 4), v("c", 5)}, v("", 3, 5),
			onnxbuild.IntAttr("transA", 1), onnxbuild.IntAttr("transB", 1), flt("alpha", 0.7), flt("beta", 1.3))},
		{name: "Gemm constant weight", wrt: []string{"w", "bias"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 3, 6)}, Outputs: []onnxbuild.IO{v("y", 3, 5)},
			Nodes: []onnxbuild.Node{node("Gemm", []string{"x", "w", "bias"}, flt("alpha", 2))},
			Inits: map[string]*tensor.Tensor{"w": w, "bias": bias}}},
		{name: "Add broadcast", g: one("Add", []onnxbuild.IO{v("a", 2, 3, 4), v("b", 3, 1)}, v("", 2, 3, 4))},
		{name: "Sub broadcast", g: one("Sub", []onnxbuild.IO{v("a", 4), v("b", 2, 3, 4)}, v("", 2, 3, 4))},
		{name: "Mul broadcast", g: one("Mul", []onnxbuild.IO{v("a", 2, 3, 4), v("b", 1, 4)}, v("", 2, 3, 4))},
		{name: "Div broadcast", avoid0: true, g: one("Div", []onnxbuild.IO{v("a", 2, 3), v("b", 3)}, v("", 2, 3))},
		{name: "Relu", avoid0: true, g: one("Relu", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4))},
		{name: "LeakyRelu", avoid0: true, g: one("LeakyRelu", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4), flt("alpha", 0.2))},
		{name: "Sigmoid", g: one("Sigmoid", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4))},
		{name: "Tanh", g: one("Tanh", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4))},
		{name: "Gelu", g: withOpset(one("Gelu", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4)), 20)},
		{name: "Gelu tanh", g: withOpset(one("Gelu", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4), str("approximate", "tanh")), 20)},
		{name: "Softmax", g: one("Softmax", []onnxbuild.IO{v("x", 2, 3, 4)}, v("", 2, 3, 4), onnxbuild.IntAttr("axis", 1))},
		{name: "Softmax opset 11", g: withOpset(one("Softmax", []onnxbuild.IO{v("x", 2, 3, 4)}, v("", 2, 3, 4), onnxbuild.IntAttr("axis", 1)), 11)},
		{name: "LogSoftmax", g: one("LogSoftmax", []onnxbuild.IO{v("x", 2, 5)}, v("", 2, 5))},
		{name: "Flatten", g: one("Flatten", []onnxbuild.IO{v("x", 2, 3, 4)}, v("", 2, 12))},
		{name: "Transpose", g: one("Transpose", []onnxbuild.IO{v("x", 2, 3, 4)}, v("", 4, 2, 3), ints("perm", 2, 0, 1))},
		{name: "Identity", g: one("Identity", []onnxbuild.IO{v("x", 3)}, v("", 3))},
		{name: "Clip", avoid0: true, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 3, 4)}, Outputs: []onnxbuild.IO{v("y", 3, 4)},
			Nodes: []onnxbuild.Node{node("Clip", []string{"x", "lo", "hi"})},
			Inits: map[string]*tensor.Tensor{"lo": tensor.Scalar(float32(-0.5)), "hi": tensor.Scalar(float32(0.8))}}},
		{name: "Concat", g: one("Concat", []onnxbuild.IO{v("a", 2, 3), v("b", 2, 1), v("c", 2, 2)}, v("", 2, 6), onnxbuild.IntAttr("axis", 1))},
		{name: "Reshape Squeeze Unsqueeze", g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 2, 1, 6)}, Outputs: []onnxbuild.IO{v("y", 3, 1, 4)},
			Nodes: []onnxbuild.Node{
				{Op: "Squeeze", Inputs: []string{"x", "ax1"}, Outputs: []string{"s"}},
				{Op: "Reshape", Inputs: []string{"s", "shape"}, Outputs: []string{"r"}},
				{Op: "Unsqueeze", Inputs: []string{"r", "ax1"}, Outputs: []string{"u"}},
				{Op: "Tanh", Inputs: []string{"u"}, Outputs: []string{"y"}},
			},
			Inits: map[string]*tensor.Tensor{"ax1": tensor.From([]int{1}, []int64{1}), "shape": tensor.From([]int{2}, []int64{3, 4})}}},
		{name: "a small network", wrt: []string{"w", "bias"}, g: onnxbuild.Graph{
			Inputs: []onnxbuild.IO{v("x", 4, 6)}, Outputs: []onnxbuild.IO{v("y", 4, 5)},
			Nodes: []onnxbuild.Node{
				{Op: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
				{Op: "Add", Inputs: []string{"h", "bias"}, Outputs: []string{"hb"}},
				{Op: "Sigmoid", Inputs: []string{"hb"}, Outputs: []string{"s"}},
				{Op: "Mul", Inputs: []string{"s", "hb"}, Outputs: []string{"sw"}}, // x used twice
				{Op: "Softmax", Inputs: []string{"sw"}, Outputs: []string{"y"}},
			},
			Inits: map[string]*tensor.Tensor{"w": w, "bias": bias}}},
	}
	return cases
}

func withOpset(g onnxbuild.Graph, opset int64) onnxbuild.Graph {
	g.Opset = opset
	return g
}

// TestBackwardMatchesFiniteDifferences checks every operator's derivative
// against central differences of Σ seed·y, computed in float64 on the
// float32 forward pass.
func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	checkGradients(t, r, gradCases(r))
}

// checkGradients runs each case's backward pass and compares every
// gradient element with a central difference. Operator families keep
// their own case lists in their own test files and call it.
func checkGradients(t *testing.T, r *rand.Rand, cases []gradCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.g.Bytes()
			m, err := model.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			inputs := map[string]*tensor.Tensor{}
			var wrt []string
			for _, in := range c.g.Inputs {
				inputs[in.Name] = randT(r, in.Shape, c.avoid0)
				wrt = append(wrt, in.Name)
			}
			wrt = append(wrt, c.wrt...)
			out, err := m.Run(context.Background(), inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			seed := randT(r, out["y"].Shape, false)
			_, grads, err := Gradients(context.Background(), m, GradRequest{Inputs: inputs, OutputGrad: seed, Wrt: wrt})
			if err != nil {
				t.Fatal(err)
			}
			objective := func(g onnxbuild.Graph, in map[string]*tensor.Tensor) float64 {
				mm, err := model.Load(g.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				o, err := mm.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatal(err)
				}
				var s float64
				for i, y := range o["y"].Data.([]float32) {
					s += float64(y) * float64(seed.Data.([]float32)[i])
				}
				return s
			}
			for _, gr := range grads {
				value := inputs[gr.Name]
				g := c.g
				if value == nil { // an initializer: perturb a copy of the graph's
					inits := map[string]*tensor.Tensor{}
					for k, t := range c.g.Inits {
						inits[k] = t.Clone()
					}
					g.Inits = inits
					value = inits[gr.Name]
				}
				x := value.Data.([]float32)
				for i := range x {
					orig := x[i]
					h := float32(1e-2) * float32(math.Max(1, math.Abs(float64(orig))))
					x[i] = orig + h
					plus := objective(g, inputs)
					x[i] = orig - h
					minus := objective(g, inputs)
					x[i] = orig
					fd := (plus - minus) / float64(2*h)
					got := float64(gr.Tensor.Data.([]float32)[i])
					if math.Abs(got-fd) > 2e-2*(1+math.Abs(fd)) {
						t.Fatalf("d/d%s[%d] = %v, finite difference %v", gr.Name, i, got, fd)
					}
				}
			}
		})
	}
}

// TestStraightThroughEstimator checks dX through an int8 layer: it equals
// dY·deq(W)ᵀ up to the quantization of dY, and dW = Xᵀ·dY exactly as in
// float32.
func TestStraightThroughEstimator(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	k, n, rows := 64, 80, 3
	w := randT(r, []int{k, n}, false)
	g := onnxbuild.Graph{
		Inputs: []onnxbuild.IO{v("x", rows, k)}, Outputs: []onnxbuild.IO{v("y", rows, n)},
		Nodes: []onnxbuild.Node{node("MatMul", []string{"x", "w"})},
		Inits: map[string]*tensor.Tensor{"w": w},
	}
	m, err := model.LoadWith(g.Bytes(), model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers[0].Kernels != "int8 per_channel" {
		t.Fatalf("layer %+v", m.Layers)
	}
	x := randT(r, []int{rows, k}, false)
	seed := randT(r, []int{rows, n}, false)
	_, grads, err := Gradients(context.Background(), m, GradRequest{Inputs: map[string]*tensor.Tensor{"x": x}, OutputGrad: seed, Wrt: []string{"x", "w"}})
	if err != nil {
		t.Fatal(err)
	}
	qw, _ := quant.QuantizeWeights(w.Data.([]float32), k, n, quant.PerChannel)
	deq := qw.Dequantize()
	dy := seed.Data.([]float32)
	dx := grads[0].Tensor.Data.([]float32)
	for i := 0; i < rows; i++ {
		for p := 0; p < k; p++ {
			var want, mag float64
			for j := 0; j < n; j++ {
				want += float64(dy[i*n+j]) * float64(deq[p*n+j])
				mag += math.Abs(float64(dy[i*n+j]) * float64(deq[p*n+j]))
			}
			if math.Abs(float64(dx[i*k+p])-want) > mag/64 {
				t.Fatalf("dx[%d,%d] = %v, want %v (±%v)", i, p, dx[i*k+p], want, mag/64)
			}
		}
	}
	xv := x.Data.([]float32)
	dw := grads[1].Tensor.Data.([]float32)
	if fmt.Sprint(grads[1].Tensor.Shape) != fmt.Sprint([]int{k, n}) {
		t.Fatalf("dW shape %v", grads[1].Tensor.Shape)
	}
	for p := 0; p < k; p++ {
		for j := 0; j < n; j++ {
			var want float64
			for i := 0; i < rows; i++ {
				want += float64(xv[i*k+p]) * float64(dy[i*n+j])
			}
			if math.Abs(float64(dw[p*n+j])-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("dW[%d,%d] = %v, want %v", p, j, dw[p*n+j], want)
			}
		}
	}
}

// TestLossesMatchFiniteDifferences checks the seeds of both losses.
func TestLossesMatchFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for _, lossName := range []string{CrossEntropy, MSE} {
		for _, softmax := range []bool{false, true} {
			g := one("Identity", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4))
			if softmax {
				g = one("Softmax", []onnxbuild.IO{v("x", 3, 4)}, v("", 3, 4), onnxbuild.IntAttr("axis", -1))
			}
			m, err := model.Load(g.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			x := randT(r, []int{3, 4}, false)
			target := tensor.From([]int{3}, []int64{0, 3, 1})
			if lossName == MSE {
				target = randT(r, []int{3, 4}, false)
			}
			lossAt := func() (float64, []float32) {
				vals, err := m.Trace(context.Background(), map[string]*tensor.Tensor{"x": x})
				if err != nil {
					t.Fatal(err)
				}
				l, slot, seed, err := lossSeed(m, vals, m.OutputSlot(0), lossName, target)
				if err != nil {
					t.Fatal(err)
				}
				xs, _ := m.Slot("x")
				gr, err := Backward(m, vals, map[int][]float32{slot: seed}, []int{xs})
				if err != nil {
					t.Fatal(err)
				}
				return l, gr[xs]
			}
			_, grad := lossAt()
			xv := x.Data.([]float32)
			for i := range xv {
				orig := xv[i]
				xv[i] = orig + 1e-2
				lp, _ := lossAt()
				xv[i] = orig - 1e-2
				lm, _ := lossAt()
				xv[i] = orig
				fd := (lp - lm) / 2e-2
				if math.Abs(float64(grad[i])-fd) > 1e-2*(1+math.Abs(fd)) {
					t.Fatalf("%s softmax=%v: dL/dx[%d] = %v, finite difference %v", lossName, softmax, i, grad[i], fd)
				}
			}
		}
	}
}
