package ml

import (
	"math"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestTreeEnsembleClassifierMulticlass(t *testing.T) {
	// Three classes: tree 0 votes class 0 or 1, tree 1 class 0 or 2.
	attrs := []*onnxpb.Attribute{
		opstest.AttrInts("nodes_treeids", 0, 0, 0, 1, 1, 1), opstest.AttrInts("nodes_nodeids", 0, 1, 2, 0, 1, 2),
		opstest.AttrInts("nodes_featureids", 0, 0, 0, 1, 0, 0), opstest.AttrStrings("nodes_modes", "BRANCH_GT", "LEAF", "LEAF", "BRANCH_GTE", "LEAF", "LEAF"),
		opstest.AttrFloats("nodes_values", 0, 0, 0, 1, 0, 0), opstest.AttrInts("nodes_truenodeids", 1, 0, 0, 1, 0, 0), opstest.AttrInts("nodes_falsenodeids", 2, 0, 0, 2, 0, 0),
		opstest.AttrInts("class_treeids", 0, 0, 1, 1), opstest.AttrInts("class_nodeids", 1, 2, 1, 2), opstest.AttrInts("class_ids", 0, 1, 0, 2),
		opstest.AttrFloats("class_weights", 0.5, 0.75, 0.25, 1), opstest.AttrStrings("classlabels_strings", "cat", "dog", "eel"),
	}
	x := tensor.From([]int{3, 2}, []float32{1, 1, -1, 0, 1, 0})
	// Row 0: x0 > 0 → class 0 +0.5; x1 >= 1 → class 0 +0.25: [0.75, 0, 0].
	// Row 1: class 1 +0.75, class 2 +1: [0, 0.75, 1].
	// Row 2: class 0 +0.5, class 2 +1: [0.5, 0, 1].
	raw := []float64{0.75, 0, 0, 0, 0.75, 1, 0.5, 0, 1}
	for _, post := range []string{"NONE", "SOFTMAX"} {
		out := run(t, node("TreeEnsembleClassifier", 3, 2, append(attrs, opstest.AttrString("post_transform", post))...), x)
		want := raw
		if post == "SOFTMAX" {
			want = nil
			for r := range 3 {
				row := raw[r*3 : r*3+3]
				sum := math.Exp(row[0]) + math.Exp(row[1]) + math.Exp(row[2])
				for _, v := range row {
					want = append(want, math.Exp(v)/sum)
				}
			}
		}
		if got := out[0].Data.([]string); strings.Join(got, ",") != "cat,eel,eel" {
			t.Errorf("%s: labels %v, want cat,eel,eel", post, got)
		}
		if !near(out[1], want, 1e-6) {
			t.Errorf("%s: scores %v, want %v", post, out[1].Data, want)
		}
	}
}

// A binary classifier whose weights score the positive class only: the
// score s becomes [1−s, s] for probabilities and [σ(−s), σ(s)] for
// margins under LOGISTIC (gradient boosting's export, base value added).
func TestTreeEnsembleClassifierBinary(t *testing.T) {
	tree := func(opset int64, w0, w1 float32, extra ...*onnxpb.Attribute) opstest.Node {
		return node("TreeEnsembleClassifier", opset, 2, append([]*onnxpb.Attribute{
			opstest.AttrInts("nodes_treeids", 0, 0, 0), opstest.AttrInts("nodes_nodeids", 0, 1, 2), opstest.AttrInts("nodes_featureids", 0, 0, 0),
			opstest.AttrStrings("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF"), opstest.AttrFloats("nodes_values", 0, 0, 0),
			opstest.AttrInts("nodes_truenodeids", 1, 0, 0), opstest.AttrInts("nodes_falsenodeids", 2, 0, 0),
			opstest.AttrInts("class_treeids", 0, 0), opstest.AttrInts("class_nodeids", 1, 2), opstest.AttrInts("class_ids", 0, 0),
			opstest.AttrFloats("class_weights", w0, w1), opstest.AttrInts("classlabels_int64s", 3, 8)}, extra...)...)
	}
	x := tensor.From([]int{2, 1}, []float32{-1, 1})
	out := run(t, tree(1, 0.25, 0.75), x)
	if y := out[0].Data.([]int64); y[0] != 3 || y[1] != 8 || !near(out[1], []float64{0.75, 0.25, 0.25, 0.75}, 1e-6) {
		t.Errorf("probabilities: %v %v", out[0].Data, out[1].Data)
	}
	out = run(t, tree(3, -2, 0.5, opstest.AttrString("post_transform", "LOGISTIC"), opstest.AttrFloats("base_values", 1)), x)
	// s = −2+1 = −1 and 0.5+1 = 1.5.
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if y := out[0].Data.([]int64); y[0] != 3 || y[1] != 8 || !near(out[1], []float64{sig(1), sig(-1), sig(-1.5), sig(1.5)}, 1e-6) {
		t.Errorf("margins: %v %v", out[0].Data, out[1].Data)
	}
}
