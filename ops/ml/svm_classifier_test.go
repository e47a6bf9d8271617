package ml

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestSVMClassifier(t *testing.T) {
	// Two classes, one support vector each (e0, e1), linear kernel:
	// s = 0.5 + x0 − x1 > 0 votes class 0. Scores are [−s, s].
	attrs := []*onnxpb.Attribute{opstest.AttrFloats("support_vectors", 1, 0, 0, 1), opstest.AttrInts("vectors_per_class", 1, 1),
		opstest.AttrFloats("coefficients", 1, -1), opstest.AttrFloats("rho", 0.5), opstest.AttrInts("classlabels_ints", 7, 9)}
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, 1})
	out := run(t, node("SVMClassifier", 1, 2, attrs...), x)
	if !slices.Equal(out[0].Data.([]int64), []int64{9, 7}) || !near(out[1], []float64{0.5, -0.5, -2.5, 2.5}, 1e-6) {
		t.Errorf("binary: %v %v", out[0].Data, out[1].Data)
	}
	// With Platt's coefficients A = −1, B = 0, P(class 0) = σ(s), and
	// two-class coupling returns the pair itself.
	out = run(t, node("SVMClassifier", 1, 2, append(attrs, opstest.AttrFloats("prob_a", -1), opstest.AttrFloats("prob_b", 0))...), x)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !slices.Equal(out[0].Data.([]int64), []int64{9, 7}) || !near(out[1], []float64{sig(-0.5), sig(0.5), sig(2.5), sig(-2.5)}, 5e-3) {
		t.Errorf("probabilities: %v %v", out[0].Data, out[1].Data)
	}
	// Three classes, support vectors e0, e1, e2, coefficients chosen so
	// that s01 = x0−x1, s02 = x0−x2, s12 = x1−x2: the largest feature
	// wins the vote.
	out = run(t, node("SVMClassifier", 1, 2, opstest.AttrFloats("support_vectors", 1, 0, 0, 0, 1, 0, 0, 0, 1), opstest.AttrInts("vectors_per_class", 1, 1, 1),
		opstest.AttrFloats("coefficients", 1, -1, -1, 1, 1, -1), opstest.AttrFloats("rho", 0, 0, 0), opstest.AttrStrings("classlabels_strings", "x", "y", "z")),
		tensor.From([]int{2, 3}, []float32{0, 5, 1, 2, 1, 3}))
	if got := out[0].Data.([]string); strings.Join(got, "") != "yz" || !near(out[1], []float64{-5, -1, 4, 1, -1, -2}, 1e-6) {
		t.Errorf("three classes: %v %v", got, out[1].Data)
	}
	if err := compileErr(node("SVMClassifier", 1, 1, opstest.AttrFloats("support_vectors", 1, 0, 0, 1), opstest.AttrInts("vectors_per_class", 1, 1),
		opstest.AttrFloats("coefficients", 1), opstest.AttrFloats("rho", 0.5), opstest.AttrInts("classlabels_ints", 7, 9)), 1); err == nil {
		t.Error("too few coefficients compiled")
	}
}
