//go:build autodiff

package autodiff

import (
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// reduceCase is a reduction at opset 18 (axes as a constant input) or,
// with axes nil, over every axis; at opset 11 the axes are an attribute.
func reduceCase(op string, opset int64, axes []int64, keep bool, in, out []int) onnxbuild.Graph {
	g := onnxbuild.Graph{
		Opset:   opset,
		Inputs:  []onnxbuild.IO{v("x", in...)},
		Outputs: []onnxbuild.IO{v("y", out...)},
	}
	var attrs []*onnxpb.Attribute
	if !keep {
		attrs = append(attrs, onnxbuild.IntAttr("keepdims", 0))
	}
	n := node(op, []string{"x"})
	switch {
	case axes != nil && opset < 18 && !(op == "ReduceSum" && opset >= 13):
		attrs = append(attrs, ints("axes", axes...))
	case axes != nil:
		n.Inputs = append(n.Inputs, "axes")
		g.Inits = map[string]*tensor.Tensor{"axes": tensor.From([]int{len(axes)}, axes)}
	}
	n.Attrs = attrs
	g.Nodes = []onnxbuild.Node{n}
	return g
}

func gradReduceCases() []gradCase {
	cases := []gradCase{
		{name: "ReduceSum axis 1", g: reduceCase("ReduceSum", 13, []int64{1}, true, []int{2, 3, 4}, []int{2, 1, 4})},
		{name: "ReduceSum all opset 11", g: reduceCase("ReduceSum", 11, nil, false, []int{2, 3}, []int{})},
		{name: "ReduceMean last", g: reduceCase("ReduceMean", 18, []int64{-1}, false, []int{3, 5}, []int{3})},
		{name: "ReduceMean opset 13 attribute", g: reduceCase("ReduceMean", 13, []int64{0, 2}, true, []int{2, 3, 4}, []int{1, 3, 1})},
		{name: "ReduceMax", g: reduceCase("ReduceMax", 18, []int64{1}, true, []int{3, 4}, []int{3, 1})},
		{name: "ReduceMin", g: reduceCase("ReduceMin", 18, []int64{0}, false, []int{3, 4}, []int{4})},
		{name: "ReduceProd", g: reduceCase("ReduceProd", 18, []int64{1}, true, []int{2, 3}, []int{2, 1})},
		{name: "ReduceL1", avoid0: true, g: reduceCase("ReduceL1", 18, []int64{1}, true, []int{2, 4}, []int{2, 1})},
		{name: "ReduceL2", g: reduceCase("ReduceL2", 18, []int64{0, 1}, false, []int{2, 3, 2}, []int{2})},
		{name: "ReduceLogSumExp", g: reduceCase("ReduceLogSumExp", 18, []int64{1}, true, []int{2, 5}, []int{2, 1})},
		{name: "ReduceSumSquare", g: reduceCase("ReduceSumSquare", 18, []int64{1}, false, []int{3, 3}, []int{3})},
		// ReduceLogSum needs a positive sum: it reduces x·x.
		{name: "ReduceLogSum of squares", avoid0: true, g: onnxbuild.Graph{
			Opset:   18,
			Inputs:  []onnxbuild.IO{v("x", 2, 3)},
			Outputs: []onnxbuild.IO{v("y", 2)},
			Nodes: []onnxbuild.Node{
				{Op: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"sq"}},
				{Op: "ReduceLogSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"y"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntAttr("keepdims", 0)}},
			},
			Inits: map[string]*tensor.Tensor{"axes": tensor.From([]int{1}, []int64{1})},
		}},
		{name: "ReduceSumSquare noop", g: func() onnxbuild.Graph {
			g := reduceCase("ReduceSumSquare", 18, nil, true, []int{2, 3}, []int{2, 3})
			g.Nodes[0].Attrs = append(g.Nodes[0].Attrs, onnxbuild.IntAttr("noop_with_empty_axes", 1))
			return g
		}()},
		{name: "LayerNormalization", g: withOpset(one("LayerNormalization",
			[]onnxbuild.IO{v("x", 3, 6), v("scale", 6), v("bias", 6)}, v("", 3, 6)), 17)},
		{name: "LayerNormalization axis 1 broadcast scale", g: withOpset(one("LayerNormalization",
			[]onnxbuild.IO{v("x", 2, 3, 4), v("scale", 1, 4), v("bias", 3, 4)}, v("", 2, 3, 4), onnxbuild.IntAttr("axis", 1), flt("epsilon", 0.01)), 17)},
		{name: "RMSNormalization", g: withOpset(one("RMSNormalization",
			[]onnxbuild.IO{v("x", 3, 5), v("scale", 5)}, v("", 3, 5)), 23)},
		{name: "RMSNormalization axis 0", g: withOpset(one("RMSNormalization",
			[]onnxbuild.IO{v("x", 2, 3), v("scale", 2, 3)}, v("", 2, 3), onnxbuild.IntAttr("axis", 0)), 23)},
		{name: "Attention 4-D", g: withOpset(one("Attention",
			[]onnxbuild.IO{v("q", 1, 2, 3, 4), v("k", 1, 2, 5, 4), v("v", 1, 2, 5, 3)}, v("", 1, 2, 3, 3)), 23)},
		{name: "Attention 3-D grouped causal softcap", g: withOpset(one("Attention",
			[]onnxbuild.IO{v("q", 1, 3, 4*2), v("k", 1, 3, 2*2), v("v", 1, 3, 2*3)}, v("", 1, 3, 4*3),
			onnxbuild.IntAttr("q_num_heads", 4), onnxbuild.IntAttr("kv_num_heads", 2), onnxbuild.IntAttr("is_causal", 1), flt("softcap", 1.5)), 23)},
		{name: "Attention past and mask", g: onnxbuild.Graph{
			Opset:   23,
			Inputs:  []onnxbuild.IO{v("q", 1, 2, 2, 3), v("k", 1, 1, 2, 3), v("v", 1, 1, 2, 2), v("pk", 1, 1, 3, 3), v("pv", 1, 1, 3, 2)},
			Outputs: []onnxbuild.IO{v("y", 1, 2, 2, 2)},
			Nodes: []onnxbuild.Node{{Op: "Attention", Inputs: []string{"q", "k", "v", "mask", "pk", "pv"}, Outputs: []string{"y", "present_k", "present_v"},
				Attrs: []*onnxpb.Attribute{flt("scale", 0.7)}}},
			Inits: map[string]*tensor.Tensor{"mask": tensor.From([]int{2, 5}, []bool{true, true, false, true, true, true, true, true, true, false})},
		}},
	}
	return cases
}

// TestReductionAndAttentionGradients checks every backward of this family
// against central differences of the forward pass.
func TestReductionAndAttentionGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	checkGradients(t, r, gradReduceCases())
}
