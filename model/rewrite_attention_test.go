package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestAttentionRewrite: multi-head self-attention written with Reshape,
// Transpose, MatMul, a scale and Softmax becomes one quantserve.Attention
// and computes what the graph as written does; variants the rewrite must
// leave alone (another softmax axis, an intermediate the graph outputs,
// heads that do not split the hidden size) stay as written.
func TestAttentionRewrite(t *testing.T) {
	const batch, seq, heads, size = 2, 7, 3, 5
	hidden := heads * size
	r := rand.New(rand.NewPCG(3, 4))
	perm := func(p ...int64) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: "perm", Type: onnxpb.AttrInts, Ints: p}
	}
	type variant struct {
		name      string
		scale     string // "", "Mul" or "Div"
		kOneStep  bool   // K by one Transpose (0, 2, 3, 1)
		axis      int64
		headsOut  bool // the scores are also a graph output
		splitSize int64
		mergeAny  bool // the heads merge to [0, 0, -1]
		fused     bool
	}
	for _, c := range []variant{
		{name: "mul", scale: "Mul", axis: -1, fused: true},
		{name: "div", scale: "Div", axis: 3, fused: true},
		{name: "no scale", axis: -1, fused: true},
		{name: "k in one transpose", scale: "Mul", kOneStep: true, axis: -1, fused: true},
		{name: "softmax axis 2", scale: "Mul", axis: 2},
		{name: "scores are an output", scale: "Mul", axis: -1, headsOut: true},
		{name: "merged to -1", scale: "Mul", axis: -1, mergeAny: true, fused: true},
		{name: "head size does not split", scale: "Mul", axis: -1, splitSize: size + 1},
		{name: "head size does not split, merged to -1", scale: "Mul", axis: -1, splitSize: size + 1, mergeAny: true, fused: true},
	} {
		merge := int64(hidden)
		if c.mergeAny {
			merge = -1
		}
		split := int64(size)
		if c.splitSize != 0 {
			split = c.splitSize
		}
		g := onnxbuild.Graph{
			Opset: 20,
			Inputs: []onnxbuild.IO{onnxbuild.V("q", tensor.Float32, -1, seq, hidden), onnxbuild.V("k", tensor.Float32, -1, seq, hidden),
				onnxbuild.V("v", tensor.Float32, -1, seq, hidden)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, seq, hidden)},
			Inits: map[string]*tensor.Tensor{
				"heads": tensor.From([]int{4}, []int64{0, 0, heads, split}),
				"merge": tensor.From([]int{3}, []int64{0, 0, merge}),
				"c":     tensor.From([]int{}, []float32{0.37}),
			},
		}
		node := func(op string, in []string, out string, attrs ...*onnxpb.Attribute) string {
			g.Nodes = append(g.Nodes, onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
			return out
		}
		qh := node("Transpose", []string{node("Reshape", []string{"q", "heads"}, "qr")}, "qh", perm(0, 2, 1, 3))
		kr := node("Reshape", []string{"k", "heads"}, "kr")
		var kt string
		if c.kOneStep {
			kt = node("Transpose", []string{kr}, "kt", perm(0, 2, 3, 1))
		} else {
			kt = node("Transpose", []string{node("Transpose", []string{kr}, "kh", perm(0, 2, 1, 3))}, "kt", perm(0, 1, 3, 2))
		}
		vh := node("Transpose", []string{node("Reshape", []string{"v", "heads"}, "vr")}, "vh", perm(0, 2, 1, 3))
		s := node("MatMul", []string{qh, kt}, "s")
		if c.scale != "" {
			s = node(c.scale, []string{s, "c"}, "scaled")
		}
		if c.headsOut {
			g.Outputs = append(g.Outputs, onnxbuild.V(s, tensor.Float32, -1, heads, seq, seq))
		}
		p := node("Softmax", []string{s}, "p", onnxbuild.IntAttr("axis", c.axis))
		o := node("Transpose", []string{node("MatMul", []string{p, vh}, "o")}, "ot", perm(0, 2, 1, 3))
		node("Reshape", []string{o, "merge"}, "y")

		in := map[string]*tensor.Tensor{"q": randFloats(r, 1, batch, seq, hidden), "k": randFloats(r, 1, batch, seq, hidden), "v": randFloats(r, 1, batch, seq, hidden)}
		var outs [2]map[string]*tensor.Tensor
		var errs [2]error
		for i, unrewritten := range []bool{false, true} {
			m, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: unrewritten})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !unrewritten {
				fused := false
				for _, st := range m.Steps() {
					fused = fused || st.Op == "Attention"
				}
				if fused != c.fused || fused && len(m.Steps()) != 1 {
					t.Errorf("%s: fused %v in %d steps, want fused %v", c.name, fused, len(m.Steps()), c.fused)
				}
			}
			outs[i], errs[i] = m.Run(context.Background(), in, nil)
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Errorf("%s: rewritten %v, as written %v", c.name, errs[0], errs[1])
			continue
		}
		if errs[0] != nil {
			continue
		}
		got, want := outs[0]["y"].Data.([]float32), outs[1]["y"].Data.([]float32)
		if !slices.Equal(outs[0]["y"].Shape, outs[1]["y"].Shape) {
			t.Errorf("%s: shape %v, as written %v", c.name, outs[0]["y"].Shape, outs[1]["y"].Shape)
			continue
		}
		for j := range want {
			if d := math.Abs(float64(got[j] - want[j])); d > 1e-5*(1+math.Abs(float64(want[j]))) {
				t.Errorf("%s: y[%d] = %v, as written %v", c.name, j, got[j], want[j])
				break
			}
		}
	}
}
