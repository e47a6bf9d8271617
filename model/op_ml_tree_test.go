package model_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

const mlDomain = "ai.onnx.ml"

// handTrees are two small trees over features x0, x1 with weights for two
// targets:
//
//	tree 0: x0 <= 0.5 (NaN goes true)  ? {t0: 1, t1: 10}          : {t0: 2, t1: 20}
//	tree 1: x1 < 2                     ? {t0: 4}
//	                                   : x0 == 3 ? {t0: 8, t1: −5} : {t1: 6}
func handTrees(prefix string) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{
		mlInts("nodes_treeids", 0, 0, 0, 1, 1, 1, 1, 1),
		mlInts("nodes_nodeids", 0, 1, 2, 0, 1, 2, 3, 4),
		mlInts("nodes_featureids", 0, 0, 0, 1, 0, 0, 0, 0),
		mlStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "BRANCH_EQ", "LEAF", "LEAF"),
		mlFloats("nodes_values", 0.5, 0, 0, 2, 0, 3, 0, 0),
		mlInts("nodes_truenodeids", 1, 0, 0, 1, 0, 3, 0, 0),
		mlInts("nodes_falsenodeids", 2, 0, 0, 2, 0, 4, 0, 0),
		mlInts("nodes_missing_value_tracks_true", 1, 0, 0, 0, 0, 0, 0, 0),
		mlInts(prefix+"_treeids", 0, 0, 0, 0, 1, 1, 1, 1),
		mlInts(prefix+"_nodeids", 1, 1, 2, 2, 1, 3, 3, 4),
		mlInts(prefix+"_ids", 0, 1, 0, 1, 0, 0, 1, 1),
		mlFloats(prefix+"_weights", 1, 10, 2, 20, 4, 8, -5, 6),
	}
}

// Rows: [0, 0] reaches {1, 10} and {4}; [3, 5] reaches {2, 20} and
// {8, −5}; [NaN, 7] reaches {1, 10} (missing values track true) and {6}
// (NaN == 3 is false).
var handX = tensor.From([]int{3, 2}, []float32{0, 0, 3, 5, float32(math.NaN()), 7})

func TestTreeEnsembleRegressorAggregates(t *testing.T) {
	for _, c := range []struct {
		agg  string
		base []float32
		want []float64
	}{
		{"SUM", nil, []float64{5, 10, 10, 15, 1, 16}},
		{"SUM", []float32{100, 200}, []float64{105, 210, 110, 215, 101, 216}},
		{"AVERAGE", nil, []float64{2.5, 5, 5, 7.5, 0.5, 8}},
		{"MIN", nil, []float64{1, 10, 2, -5, 1, 6}},
		{"MAX", nil, []float64{4, 10, 8, 20, 1, 10}},
	} {
		for _, opset := range []int64{1, 3} {
			attrs := append(handTrees("target"), mlStr("aggregate_function", c.agg), mlInt("n_targets", 2))
			if c.base != nil {
				attrs = append(attrs, mlFloats("base_values", c.base...))
			}
			m := mlMustLoad(t, mlDomain, opset, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
				mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, attrs...))
			y := mlRun(t, m, map[string]*tensor.Tensor{"X": handX})["Y"]
			if y.DType != tensor.Float32 || !equalInts(y.Shape, 3, 2) || !mlClose(y, c.want, 1e-6) {
				t.Errorf("%s base %v opset %d: got %v %v, want %v", c.agg, c.base, opset, y.Shape, y.Data, c.want)
			}
		}
	}
}

func equalInts(s []int, want ...int) bool {
	if len(s) != len(want) {
		return false
	}
	for i := range s {
		if s[i] != want[i] {
			return false
		}
	}
	return true
}

// Opset 3 takes double thresholds and weights as tensors, and inputs of
// every numeric type; one row may come as a vector.
func TestTreeEnsembleRegressorTensorsAndTypes(t *testing.T) {
	attrs := handTrees("target")
	for i, a := range attrs {
		switch a.Name {
		case "nodes_values":
			attrs[i] = mlTensor("nodes_values_as_tensor", tensor.From([]int{8}, []float64{0.5, 0, 0, 2, 0, 3, 0, 0}))
		case "target_weights":
			attrs[i] = mlTensor("target_weights_as_tensor", tensor.From([]int{8}, []float64{1, 10, 2, 20, 4, 8, -5, 6}))
		}
	}
	attrs = append(attrs, mlInt("n_targets", 2), mlStr("post_transform", "LOGISTIC"))
	m := mlMustLoad(t, mlDomain, 3, []mlIO{mlV("X", tensor.Int64, 2)}, []mlIO{mlV("Y", tensor.Float32, 1, 2)},
		mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, attrs...))
	y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2}, []int64{3, 5})})["Y"]
	logistic := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !equalInts(y.Shape, 1, 2) || !mlClose(y, []float64{logistic(10), logistic(15)}, 1e-6) {
		t.Errorf("got %v %v", y.Shape, y.Data)
	}
}

func TestTreeEnsembleClassifierMulticlass(t *testing.T) {
	// Three classes: tree 0 votes class 0 or 1, tree 1 class 0 or 2.
	attrs := []*onnxpb.Attribute{
		mlInts("nodes_treeids", 0, 0, 0, 1, 1, 1), mlInts("nodes_nodeids", 0, 1, 2, 0, 1, 2),
		mlInts("nodes_featureids", 0, 0, 0, 1, 0, 0), mlStrs("nodes_modes", "BRANCH_GT", "LEAF", "LEAF", "BRANCH_GTE", "LEAF", "LEAF"),
		mlFloats("nodes_values", 0, 0, 0, 1, 0, 0), mlInts("nodes_truenodeids", 1, 0, 0, 1, 0, 0), mlInts("nodes_falsenodeids", 2, 0, 0, 2, 0, 0),
		mlInts("class_treeids", 0, 0, 1, 1), mlInts("class_nodeids", 1, 2, 1, 2), mlInts("class_ids", 0, 1, 0, 2),
		mlFloats("class_weights", 0.5, 0.75, 0.25, 1), mlStrs("classlabels_strings", "cat", "dog", "eel"),
	}
	x := tensor.From([]int{3, 2}, []float32{1, 1, -1, 0, 1, 0})
	// Row 0: x0 > 0 → class 0 +0.5; x1 >= 1 → class 0 +0.25: [0.75, 0, 0].
	// Row 1: class 1 +0.75, class 2 +1: [0, 0.75, 1].
	// Row 2: class 0 +0.5, class 2 +1: [0.5, 0, 1].
	raw := []float64{0.75, 0, 0, 0, 0.75, 1, 0.5, 0, 1}
	for _, post := range []string{"NONE", "SOFTMAX"} {
		m := mlMustLoad(t, mlDomain, 3, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.String, -1), mlV("Z", tensor.Float32, -1, 3)},
			mlNode("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append(attrs, mlStr("post_transform", post))...))
		out := mlRun(t, m, map[string]*tensor.Tensor{"X": x})
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
		if got := out["Y"].Data.([]string); strings.Join(got, ",") != "cat,eel,eel" {
			t.Errorf("%s: labels %v, want cat,eel,eel", post, got)
		}
		if !mlClose(out["Z"], want, 1e-6) {
			t.Errorf("%s: scores %v, want %v", post, out["Z"].Data, want)
		}
	}
}

// A binary classifier whose weights score the positive class only: the
// score s becomes [1−s, s] for probabilities and [σ(−s), σ(s)] for
// margins under LOGISTIC (gradient boosting's export, base value added).
func TestTreeEnsembleClassifierBinary(t *testing.T) {
	tree := func(w0, w1 float32, extra ...*onnxpb.Attribute) *onnxpb.Node {
		return mlNode("TreeEnsembleClassifier", []string{"X"}, []string{"Y", "Z"}, append([]*onnxpb.Attribute{
			mlInts("nodes_treeids", 0, 0, 0), mlInts("nodes_nodeids", 0, 1, 2), mlInts("nodes_featureids", 0, 0, 0),
			mlStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF"), mlFloats("nodes_values", 0, 0, 0),
			mlInts("nodes_truenodeids", 1, 0, 0), mlInts("nodes_falsenodeids", 2, 0, 0),
			mlInts("class_treeids", 0, 0), mlInts("class_nodeids", 1, 2), mlInts("class_ids", 0, 0),
			mlFloats("class_weights", w0, w1), mlInts("classlabels_int64s", 3, 8)}, extra...)...)
	}
	x := tensor.From([]int{2, 1}, []float32{-1, 1})
	ios := []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)}
	m := mlMustLoad(t, mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 1)}, ios, tree(0.25, 0.75))
	out := mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	if y := out["Y"].Data.([]int64); y[0] != 3 || y[1] != 8 || !mlClose(out["Z"], []float64{0.75, 0.25, 0.25, 0.75}, 1e-6) {
		t.Errorf("probabilities: %v %v", out["Y"].Data, out["Z"].Data)
	}
	m = mlMustLoad(t, mlDomain, 3, []mlIO{mlV("X", tensor.Float32, -1, 1)}, ios,
		tree(-2, 0.5, mlStr("post_transform", "LOGISTIC"), mlFloats("base_values", 1)))
	out = mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	// s = −2+1 = −1 and 0.5+1 = 1.5.
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if y := out["Y"].Data.([]int64); y[0] != 3 || y[1] != 8 || !mlClose(out["Z"], []float64{sig(1), sig(-1), sig(-1.5), sig(1.5)}, 1e-6) {
		t.Errorf("margins: %v %v", out["Y"].Data, out["Z"].Data)
	}
}

// v5 attributes of the trees of TestTreeEnsembleV5: branches by position,
// leaves by position, one BRANCH_MEMBER node.
//
//	tree 0 (root 0): x0 <= 1 ? (x1 in {2, 5} ? leaf0 : leaf1) : leaf2
//	tree 1 (root 2): a single leaf (both branches go to leaf3)
func v5Attrs(agg, post int64) []*onnxpb.Attribute {
	modes := &tensor.Tensor{DType: tensor.Uint8, Shape: []int{3}, Data: []uint8{0, 6, 0}}
	return []*onnxpb.Attribute{
		mlInts("nodes_featureids", 0, 1, 0), mlTensor("nodes_modes", modes),
		mlTensor("nodes_splits", tensor.From([]int{3}, []float64{1, 0, 0})),
		mlInts("nodes_truenodeids", 1, 0, 3), mlInts("nodes_trueleafs", 0, 1, 1),
		mlInts("nodes_falsenodeids", 2, 1, 3), mlInts("nodes_falseleafs", 1, 1, 1),
		mlTensor("membership_values", tensor.From([]int{3}, []float64{5, 2, math.NaN()})),
		mlInts("leaf_targetids", 0, 1, 0, 1), mlTensor("leaf_weights", tensor.From([]int{4}, []float64{1, 2, 4, 8})),
		mlInts("tree_roots", 0, 2), mlInt("n_targets", 2), mlInt("aggregate_function", agg), mlInt("post_transform", post),
	}
}

func TestTreeEnsembleV5(t *testing.T) {
	x := tensor.From([]int{4, 2}, []float64{0, 5, 0, 3, 7, 2, 0, math.NaN()})
	// Row 0: leaf0 (t0 1) + leaf3 (t1 8); row 1: leaf1 (t1 2) + leaf3;
	// row 2: leaf2 (t0 4) + leaf3; row 3: NaN is in no set: leaf1 + leaf3.
	for _, c := range []struct {
		agg  int64
		want []float64
	}{
		{1, []float64{1, 8, 0, 10, 4, 8, 0, 10}}, // SUM
		{0, []float64{0.5, 4, 0, 5, 2, 4, 0, 5}}, // AVERAGE over 2 trees
		{2, []float64{1, 8, 0, 2, 4, 8, 0, 2}},   // MIN
		{3, []float64{1, 8, 0, 8, 4, 8, 0, 8}},   // MAX
	} {
		m := mlMustLoad(t, mlDomain, 5, []mlIO{mlV("X", tensor.Float64, -1, 2)}, []mlIO{mlV("Y", tensor.Float64, -1, 2)},
			mlNode("TreeEnsemble", []string{"X"}, []string{"Y"}, v5Attrs(c.agg, 0)...))
		y := mlRun(t, m, map[string]*tensor.Tensor{"X": x})["Y"]
		if y.DType != tensor.Float64 || !mlClose(y, c.want, 1e-12) {
			t.Errorf("aggregate %d: got %v, want %v", c.agg, y.Data, c.want)
		}
	}
	// FP16 in, FP16 out.
	m := mlMustLoad(t, mlDomain, 5, []mlIO{mlV("X", tensor.Float16, -1, 2)}, []mlIO{mlV("Y", tensor.Float16, -1, 2)},
		mlNode("TreeEnsemble", []string{"X"}, []string{"Y"}, v5Attrs(1, 0)...))
	x16 := tensor.From([]int{1, 2}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 5}))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": x16})["Y"]; y.DType != tensor.Float16 || !mlClose(y, []float64{1, 8}, 0) {
		t.Errorf("FP16: got %v %v", y.DType, y.Data)
	}
	// post_transform 1 is SOFTMAX, 2 LOGISTIC; FP32 in, FP32 out.
	x32 := tensor.From([]int{1, 2}, []float32{7, 2})
	for post, want := range map[int64][]float64{
		1: {math.Exp(4) / (math.Exp(4) + math.Exp(8)), math.Exp(8) / (math.Exp(4) + math.Exp(8))},
		2: {1 / (1 + math.Exp(-4)), 1 / (1 + math.Exp(-8))},
	} {
		m := mlMustLoad(t, mlDomain, 5, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
			mlNode("TreeEnsemble", []string{"X"}, []string{"Y"}, v5Attrs(1, post)...))
		if y := mlRun(t, m, map[string]*tensor.Tensor{"X": x32})["Y"]; y.DType != tensor.Float32 || !mlClose(y, want, 1e-6) {
			t.Errorf("post_transform %d: got %v, want %v", post, y.Data, want)
		}
	}
}

func replaceAttr(attrs []*onnxpb.Attribute, a *onnxpb.Attribute) []*onnxpb.Attribute {
	out := []*onnxpb.Attribute{}
	for _, b := range attrs {
		if b.Name != a.Name {
			out = append(out, b)
		}
	}
	return append(out, a)
}

// Malformed or oversized trees are refused at load; inputs the trees
// cannot read are input errors at run time.
func TestTreeEnsemblesRefuseBadTrees(t *testing.T) {
	in, out := []mlIO{mlV("X", tensor.Float32, -1, -1)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)}
	reg := func(attrs ...*onnxpb.Attribute) error {
		_, err := mlLoad(mlDomain, 3, in, out, mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, append(attrs, mlInt("n_targets", 2))...))
		return err
	}
	v5 := func(attrs []*onnxpb.Attribute) error {
		_, err := mlLoad(mlDomain, 5, in, out, mlNode("TreeEnsemble", []string{"X"}, []string{"Y"}, attrs...))
		return err
	}
	cases := map[string]error{
		"branch to a missing node": reg(replaceAttr(handTrees("target"), mlInts("nodes_falsenodeids", 2, 0, 0, 1, 0, 9, 0, 0))...),
		"weight for target 2 of 2": reg(replaceAttr(handTrees("target"), mlInts("target_ids", 0, 1, 0, 1, 0, 0, 1, 2))...),
		"unknown mode":             reg(replaceAttr(handTrees("target"), mlStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "BRANCH_ALMOST", "LEAF", "LEAF"))...),
		"a cycle": reg(replaceAttr(replaceAttr(handTrees("target"), mlInts("nodes_truenodeids", 1, 0, 0, 1, 0, 0, 0, 0)),
			mlStrs("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "BRANCH_LEQ", "BRANCH_EQ", "LEAF", "LEAF"))...),
		"short nodes_values":    reg(replaceAttr(handTrees("target"), mlFloats("nodes_values", 1, 2))...),
		"member without values": v5(replaceAttr(v5Attrs(1, 0), mlTensor("membership_values", tensor.From([]int{1}, []float64{2})))),
		"root out of range":     v5(replaceAttr(v5Attrs(1, 0), mlInts("tree_roots", 0, 7))),
		"leaf out of range":     v5(replaceAttr(v5Attrs(1, 0), mlInts("nodes_falsenodeids", 2, 1, 9))),
		"aggregate 4":           v5(replaceAttr(v5Attrs(1, 0), mlInt("aggregate_function", 4))),
		"negative feature":      v5(replaceAttr(v5Attrs(1, 0), mlInts("nodes_featureids", 0, -1, 0))),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: loaded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// A chain deeper than the bound: ErrUnsupported, whatever the nodes.
	const deep = 5000
	feat, trueIDs, falseIDs, tl, fl := make([]int64, deep), make([]int64, deep), make([]int64, deep), make([]int64, deep), make([]int64, deep)
	for i := range deep {
		trueIDs[i], falseIDs[i], fl[i] = int64(i+1), 0, 1
	}
	trueIDs[deep-1], tl[deep-1] = 0, 1
	modes := &tensor.Tensor{DType: tensor.Uint8, Shape: []int{deep}, Data: make([]uint8, deep)}
	err := v5([]*onnxpb.Attribute{mlInts("nodes_featureids", feat...), mlTensor("nodes_modes", modes),
		mlTensor("nodes_splits", tensor.From([]int{deep}, make([]float32, deep))), mlInts("nodes_truenodeids", trueIDs...),
		mlInts("nodes_trueleafs", tl...), mlInts("nodes_falsenodeids", falseIDs...), mlInts("nodes_falseleafs", fl...),
		mlInts("leaf_targetids", 0), mlTensor("leaf_weights", tensor.From([]int{1}, []float32{1})), mlInts("tree_roots", 0), mlInt("n_targets", 2)})
	if !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("a tree %d deep: %v, want refused as too deep", deep, err)
	}
	// Run-time: too few features, too many dimensions, a type the
	// operator does not take.
	m := mlMustLoad(t, mlDomain, 3, in, out, mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, append(handTrees("target"), mlInt("n_targets", 2))...))
	for name, x := range map[string]*tensor.Tensor{
		"one feature": tensor.From([]int{2, 1}, []float32{1, 2}),
	} {
		if _, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": x}, nil); !errors.Is(err, model.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	m = mlMustLoad(t, mlDomain, 3, []mlIO{mlV("X", tensor.Float32, nil...)}, out, mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, append(handTrees("target"), mlInt("n_targets", 2))...))
	if _, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": tensor.From([]int{1, 1, 2}, []float32{1, 2})}, nil); !errors.Is(err, model.ErrInput) {
		t.Errorf("rank 3: %v, want an input error", err)
	}
	// A tree that is one leaf reads no feature: X may have none.
	m = mlMustLoad(t, mlDomain, 1, in, []mlIO{mlV("Y", tensor.Float32, -1, 1)}, mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"},
		mlInts("nodes_treeids", 0), mlInts("nodes_nodeids", 0), mlInts("nodes_featureids", 0), mlStrs("nodes_modes", "LEAF"),
		mlFloats("nodes_values", 0), mlInts("nodes_truenodeids", 0), mlInts("nodes_falsenodeids", 0),
		mlInts("target_treeids", 0), mlInts("target_nodeids", 0), mlInts("target_ids", 0), mlFloats("target_weights", 2.5)))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 0}, []float32{})})["Y"]; !equalInts(y.Shape, 2, 1) || !mlClose(y, []float64{2.5, 2.5}, 0) {
		t.Errorf("one-leaf tree over no features: %v %v", y.Shape, y.Data)
	}
	// Zero rows give zero rows.
	m = mlMustLoad(t, mlDomain, 3, in, out, mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"}, append(handTrees("target"), mlInt("n_targets", 2))...))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{0, 2}, []float32{})})["Y"]; !equalInts(y.Shape, 0, 2) {
		t.Errorf("zero rows: shape %v", y.Shape)
	}
}

// forestModel is a seeded random forest regressor: trees full binary
// trees of the given depth over f features, BRANCH_LEQ everywhere, as
// scikit-learn's exports are.
func forestModel(trees, depth, f int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var treeIDs, nodeIDs, feats, trues, falses, wTree, wNode, wIDs []int64
	var modes []string
	var values, weights []float32
	per := 1<<(depth+1) - 1
	for tr := range trees {
		for id := range per {
			treeIDs, nodeIDs = append(treeIDs, int64(tr)), append(nodeIDs, int64(id))
			if id >= per/2 { // the last level: leaves
				feats, trues, falses, modes, values = append(feats, 0), append(trues, 0), append(falses, 0), append(modes, "LEAF"), append(values, 0)
				wTree, wNode, wIDs, weights = append(wTree, int64(tr)), append(wNode, int64(id)), append(wIDs, 0), append(weights, float32(r.NormFloat64()))
				continue
			}
			feats, modes, values = append(feats, int64(r.IntN(f))), append(modes, "BRANCH_LEQ"), append(values, float32(r.NormFloat64()))
			trues, falses = append(trues, int64(2*id+1)), append(falses, int64(2*id+2))
		}
	}
	return mlModelBytes(mlDomain, 3, []mlIO{mlV("X", tensor.Float32, -1, f)}, []mlIO{mlV("Y", tensor.Float32, -1, 1)}, nil,
		mlNode("TreeEnsembleRegressor", []string{"X"}, []string{"Y"},
			mlInts("nodes_treeids", treeIDs...), mlInts("nodes_nodeids", nodeIDs...), mlInts("nodes_featureids", feats...),
			mlStrs("nodes_modes", modes...), mlFloats("nodes_values", values...), mlInts("nodes_truenodeids", trues...),
			mlInts("nodes_falsenodeids", falses...), mlInts("target_treeids", wTree...), mlInts("target_nodeids", wNode...),
			mlInts("target_ids", wIDs...), mlFloats("target_weights", weights...), mlInt("n_targets", 1), mlStr("aggregate_function", "AVERAGE")))
}

// BenchmarkTreeEnsembleRegressor runs a 100-tree forest of depth 8 over
// 20 features on batches of 1 and 1,000 rows; it reports rows/s.
func BenchmarkTreeEnsembleRegressor(b *testing.B) {
	m, err := model.Load(forestModel(100, 8, 20, 1))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 3))
	for _, rows := range []int{1, 1000} {
		x := make([]float32, rows*20)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		in := map[string]*tensor.Tensor{"X": tensor.From([]int{rows, 20}, x)}
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(context.Background(), in, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// Randomly malformed ensembles — ids out of range, cycles, short lists —
// are refused at load or run; none panics.
func TestTreeEnsemblesMalformedNeverPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	// pick returns k values in [0, n), one in twelve out of range.
	pick := func(k, n int) []int64 {
		v := make([]int64, k)
		for i := range v {
			v[i] = int64(r.IntN(max(n, 1)))
			if r.IntN(12) == 0 {
				v[i] = []int64{-1, int64(n)}[r.IntN(2)]
			}
		}
		return v
	}
	modes := []string{"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF"}
	x := tensor.From([]int{3, 3}, []float32{0, 1, 2, float32(math.NaN()), -1, 5, 3, 3, 3})
	in, out := []mlIO{mlV("X", tensor.Float32, -1, 3)}, []mlIO{mlV("Y", tensor.Float32, nil...)}
	try := func(opset int64, op string, attrs ...*onnxpb.Attribute) bool {
		m, err := mlLoad(mlDomain, opset, in, out, mlNode(op, []string{"X"}, []string{"Y"}, attrs...))
		if err != nil {
			return false
		}
		if _, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": x}, nil); err != nil && !errors.Is(err, model.ErrInput) {
			t.Errorf("%s: run: %v", op, err)
		}
		return true
	}
	loaded := 0
	for range 400 {
		n, nw := 1+r.IntN(6), r.IntN(6)
		ms := make([]string, n)
		for i := range ms {
			ms[i] = modes[r.IntN(len(modes))]
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(r.IntN(5) - 1)
		}
		if try(3, "TreeEnsembleRegressor", mlInts("nodes_treeids", pick(n, 1)...), mlInts("nodes_nodeids", seq(n)...),
			mlInts("nodes_featureids", pick(n, 3)...), mlStrs("nodes_modes", ms...), mlFloats("nodes_values", vals...),
			mlInts("nodes_truenodeids", pick(n, n)...), mlInts("nodes_falsenodeids", pick(n, n)...), mlInts("target_treeids", pick(nw, 1)...),
			mlInts("target_nodeids", pick(nw, n)...), mlInts("target_ids", pick(nw, 2)...), mlFloats("target_weights", make([]float32, nw)...),
			mlInt("n_targets", 2)) {
			loaded++
		}
		nl := 1 + r.IntN(4)
		m5 := make([]uint8, n)
		var members []float64
		for i := range m5 {
			m5[i] = uint8(r.IntN(7) + r.IntN(12)/11)
			if m5[i] == 6 && r.IntN(12) > 0 {
				members = append(members, float64(r.IntN(3)), math.NaN())
			}
		}
		tl, fl := pick(n, 2), pick(n, 2)
		tn, fn := make([]int64, n), make([]int64, n)
		for i := range n {
			tn[i], fn[i] = pick(1, []int{n, nl}[min(max(tl[i], 0), 1)])[0], pick(1, []int{n, nl}[min(max(fl[i], 0), 1)])[0]
		}
		if try(5, "TreeEnsemble", mlInts("nodes_featureids", pick(n, 3)...),
			mlTensor("nodes_modes", &tensor.Tensor{DType: tensor.Uint8, Shape: []int{n}, Data: m5}), mlTensor("nodes_splits", tensor.From([]int{n}, vals)),
			mlInts("nodes_truenodeids", tn...), mlInts("nodes_falsenodeids", fn...), mlInts("nodes_trueleafs", tl...), mlInts("nodes_falseleafs", fl...),
			mlInts("leaf_targetids", pick(nl, 2)...), mlTensor("leaf_weights", tensor.From([]int{nl}, make([]float32, nl))),
			mlInts("tree_roots", pick(1+r.IntN(2), n)...), mlInt("n_targets", 2),
			mlTensor("membership_values", tensor.From([]int{len(members)}, members))) {
			loaded++
		}
	}
	t.Logf("%d of 800 loaded", loaded)
	if loaded < 50 {
		t.Errorf("only %d of 800 random ensembles loaded: the run path is barely tried", loaded)
	}
}

func seq(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}
