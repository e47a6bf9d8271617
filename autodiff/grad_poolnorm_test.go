//go:build autodiff

package autodiff

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// poolRamp returns a constant of the given shape holding 0, 20, 40, ...
// in a random order. Added to an N(0, 1) input before a max, it decides
// every window's maximum by a margin far above the finite-difference
// step, so central differences do not cross a tie.
func poolRamp(r *rand.Rand, shape ...int) *tensor.Tensor {
	n := numel(shape)
	v := make([]float32, n)
	for i, j := range r.Perm(n) {
		v[i] = 20 * float32(j)
	}
	return tensor.From(shape, v)
}

// rampedMax is y = op(x + ramp) for a max-type pooling op.
func rampedMax(r *rand.Rand, op string, in, out []int, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	return onnxbuild.Graph{
		Inputs:  []onnxbuild.IO{v("x", in...)},
		Outputs: []onnxbuild.IO{v("y", out...)},
		Nodes: []onnxbuild.Node{
			{Op: "Add", Inputs: []string{"x", "ramp"}, Outputs: []string{"xr"}},
			{Op: op, Inputs: []string{"xr"}, Outputs: []string{"y"}, Attrs: attrs},
		},
		Inits: map[string]*tensor.Tensor{"ramp": poolRamp(r, in...)},
	}
}

// batchNormGraph is BatchNormalization over graph inputs x, scale, B,
// mean and v, its variance v·v + 0.5 (positive whatever v is).
func batchNormGraph(opset int64, x []int, c int, attrs ...*onnxpb.Attribute) onnxbuild.Graph {
	return onnxbuild.Graph{
		Opset:   opset,
		Inputs:  []onnxbuild.IO{v("x", x...), v("scale", c), v("B", c), v("mean", c), v("v", c)},
		Outputs: []onnxbuild.IO{v("y", x...)},
		Nodes: []onnxbuild.Node{
			{Op: "Mul", Inputs: []string{"v", "v"}, Outputs: []string{"vv"}},
			{Op: "Add", Inputs: []string{"vv", "half"}, Outputs: []string{"var"}},
			{Op: "BatchNormalization", Inputs: []string{"x", "scale", "B", "mean", "var"}, Outputs: []string{"y"}, Attrs: attrs},
		},
		Inits: map[string]*tensor.Tensor{"half": tensor.Scalar(float32(0.5))},
	}
}

func poolNormGradCases(r *rand.Rand) []gradCase {
	k3 := ints("kernel_shape", 3, 3)
	return []gradCase{
		{name: "MaxPool 3x3 stride 2 pad 1", g: rampedMax(r, "MaxPool", []int{1, 2, 7, 7}, []int{1, 2, 4, 4}, k3, ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))},
		{name: "MaxPool overlapping, dilated, ceil", g: rampedMax(r, "MaxPool", []int{2, 1, 6, 5}, []int{2, 1, 3, 3}, ints("kernel_shape", 2, 2), ints("dilations", 2, 1), ints("strides", 1, 2), onnxbuild.IntAttr("ceil_mode", 1))},
		{name: "MaxPool 1-D", g: rampedMax(r, "MaxPool", []int{1, 3, 9}, []int{1, 3, 4}, ints("kernel_shape", 3), ints("strides", 2))},
		{name: "MaxPool 3-D SAME_UPPER", g: rampedMax(r, "MaxPool", []int{1, 1, 3, 4, 3}, []int{1, 1, 2, 2, 2}, ints("kernel_shape", 2, 2, 2), ints("strides", 2, 2, 2), str("auto_pad", "SAME_UPPER"))},
		{name: "GlobalMaxPool", g: rampedMax(r, "GlobalMaxPool", []int{2, 3, 4, 3}, []int{2, 3, 1, 1})},
		{name: "AveragePool pads", g: one("AveragePool", []onnxbuild.IO{v("x", 1, 2, 6, 6)}, v("", 1, 2, 3, 3), k3, ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))},
		{name: "AveragePool count_include_pad ceil", g: one("AveragePool", []onnxbuild.IO{v("x", 1, 2, 6, 5)}, v("", 1, 2, 3, 3), k3, ints("strides", 2, 2), ints("pads", 1, 0, 0, 0), onnxbuild.IntAttr("count_include_pad", 1), onnxbuild.IntAttr("ceil_mode", 1))},
		{name: "AveragePool 3-D dilated", g: withOpset(one("AveragePool", []onnxbuild.IO{v("x", 1, 1, 5, 4, 4)}, v("", 1, 1, 3, 2, 3), ints("kernel_shape", 2, 2, 2), ints("dilations", 2, 2, 1), ints("pads", 0, 0, 0, 1, 0, 0)), 22)},
		{name: "GlobalAveragePool", g: one("GlobalAveragePool", []onnxbuild.IO{v("x", 2, 3, 4, 5)}, v("", 2, 3, 1, 1))},
		{name: "BatchNormalization", g: batchNormGraph(15, []int{2, 3, 4, 2}, 3, flt("epsilon", 1e-3))},
		{name: "BatchNormalization rank 2", g: batchNormGraph(9, []int{4, 5}, 5)},
		{name: "BatchNormalization per activation (opset 7)", g: batchNormGraph(7, []int{3, 2, 2}, 4, onnxbuild.IntAttr("spatial", 0))},
		{name: "BatchNormalization folded", g: onnxbuild.Graph{
			Opset:   15,
			Inputs:  []onnxbuild.IO{v("x", 2, 3, 3, 3)},
			Outputs: []onnxbuild.IO{v("y", 2, 3, 3, 3)},
			Nodes:   []onnxbuild.Node{{Op: "BatchNormalization", Inputs: []string{"x", "s", "b", "m", "var"}, Outputs: []string{"y"}}},
			Inits: map[string]*tensor.Tensor{
				"s": randT(r, []int{3}, false), "b": randT(r, []int{3}, false), "m": randT(r, []int{3}, false),
				"var": tensor.From([]int{3}, []float32{0.5, 1.5, 3})},
		}},
	}
}

// TestPoolNormGradients checks the pooling and batch-normalization
// backward passes against central differences.
func TestPoolNormGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	checkGradients(t, r, poolNormGradCases(r))
}

// TestPoolNormGradientRefusals: what has no gradient says so as a request
// error, never a panic or a wrong answer.
func TestPoolNormGradientRefusals(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	x := randT(r, []int{2, 3, 2, 2}, false)
	c := func() *tensor.Tensor { return randT(r, []int{3}, false) }
	train := batchNormGraph(15, []int{2, 3, 2, 2}, 3, onnxbuild.IntAttr("training_mode", 1))
	folded := onnxbuild.Graph{
		Opset:   15,
		Inputs:  []onnxbuild.IO{v("x", 2, 3, 2, 2)},
		Outputs: []onnxbuild.IO{v("y", 2, 3, 2, 2)},
		Nodes:   []onnxbuild.Node{{Op: "BatchNormalization", Inputs: []string{"x", "s", "b", "m", "var"}, Outputs: []string{"y"}}},
		Inits:   map[string]*tensor.Tensor{"s": c(), "b": c(), "m": c(), "var": tensor.From([]int{3}, []float32{1, 1, 1})},
	}
	for _, tc := range []struct {
		g    onnxbuild.Graph
		in   map[string]*tensor.Tensor
		wrt  []string
		want string
	}{
		{train, map[string]*tensor.Tensor{"x": x, "scale": c(), "B": c(), "mean": c(), "v": c()}, nil, "training mode"},
		{folded, map[string]*tensor.Tensor{"x": x}, []string{"x", "s"}, "folded its constant"},
	} {
		m, err := model.Load(tc.g.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Gradients(context.Background(), m, GradRequest{Inputs: tc.in, Wrt: tc.wrt})
		if !errors.Is(err, model.ErrInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a request error with %q", tc.wrt, err, tc.want)
		}
	}
}
