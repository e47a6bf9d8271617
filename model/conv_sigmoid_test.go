package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestConvSigmoidRewrites: the sigmoid family after a convolution (SiLU
// as exporters spell it out, x·Sigmoid(x), either operand first, after a
// dense and a depthwise convolution; Sigmoid; Swish with alpha 1) is
// fused into it, and the rewritten model computes what the model as
// written does, on float32 and int8 weights. A Sigmoid whose output
// something else reads too, and Swish with another alpha, stay separate
// steps.
func TestConvSigmoidRewrites(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 29))
	b := &fusedTestGraph{r: r, g: &onnxpb.Graph{Name: "silu"}}
	vi := floatInfo
	b.g.Inputs = []*onnxpb.ValueInfo{vi("x", -1, 3, 20, 24)}
	c1 := b.bn(b.conv("x", 3, 16, 3, 1, 1), 16)
	h1 := b.node("Mul", []string{c1, b.node("Sigmoid", []string{c1})})
	c2 := b.bn(b.conv(h1, 16, 16, 3, 1, 16), 16) // depthwise
	h2 := b.node("Mul", []string{b.node("Sigmoid", []string{c2}), c2})
	h3 := b.node("Sigmoid", []string{b.conv(h2, 16, 16, 1, 1, 1)})
	h4 := b.node("Swish", []string{b.conv(h3, 16, 16, 3, 2, 1)})
	// Not fused: the Sigmoid's output is read twice; Swish's alpha is 2.
	c5 := b.conv(h4, 16, 16, 1, 1, 1)
	s5 := b.node("Sigmoid", []string{c5})
	h5 := b.node("Add", []string{b.node("Mul", []string{c5, s5}), s5})
	h6 := b.node("Swish", []string{b.conv(h5, 16, 8, 1, 1, 1)}, &onnxpb.Attribute{Name: "alpha", Type: onnxpb.AttrFloat, F: 2})
	b.g.Nodes[len(b.g.Nodes)-1].Outputs[0] = "y"
	_ = h6
	b.g.Outputs = []*onnxpb.ValueInfo{vi("y", -1, 8, 10, 12)}
	data := onnxpb.Marshal(&onnxpb.Model{IRVersion: 10, OpsetImport: []onnxpb.OpsetID{{Version: 24}}, Graph: b.g})

	in := map[string]*tensor.Tensor{"x": tensor.From([]int{2, 3, 20, 24}, convRandom(r, []int{2, 3, 20, 24}))}
	want := runAsWritten(t, data, in)
	wv := want.Data.([]float32)
	lo, hi := slices.Min(wv), slices.Max(wv)
	for _, q := range []bool{false, true} {
		m, err := LoadWith(data, Options{Quantize: q, Scheme: quant.PerChannel})
		if err != nil {
			t.Fatal(err)
		}
		var fused [][]string
		var others []string
		for _, st := range m.Steps() {
			if st.Op != fusedConvType {
				others = append(others, st.Op)
				continue
			}
			fused = append(fused, st.Params.(*conv.FusedConvAttrs).Fused)
		}
		wantFused := [][]string{{"BatchNormalization", "Swish"}, {"BatchNormalization", "Swish"}, {"Sigmoid"}, {"Swish"}}
		if !slices.EqualFunc(fused, wantFused, slices.Equal) {
			t.Errorf("int8=%v: fused %q, want %q", q, fused, wantFused)
		}
		if want := []string{"Conv", "Sigmoid", "Mul", "Add", "Conv", "Swish"}; !slices.Equal(others, want) {
			t.Errorf("int8=%v: other steps %q, want %q", q, others, want)
		}
		tol := 1e-5 * float64(hi-lo)
		if q {
			tol = 0.02 * float64(hi-lo)
		}
		checkRuns(t, m, in, want, tol, 2, fmt.Sprintf("int8=%v", q))
	}
}
