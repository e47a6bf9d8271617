package ml

import (
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// handTrees are two small trees over features x0, x1 with weights for two
// targets:
//
//	tree 0: x0 <= 0.5 (NaN goes true)  ? {t0: 1, t1: 10}          : {t0: 2, t1: 20}
//	tree 1: x1 < 2                     ? {t0: 4}
//	                                   : x0 == 3 ? {t0: 8, t1: −5} : {t1: 6}
func handTrees(prefix string) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{
		opstest.AttrInts("nodes_treeids", 0, 0, 0, 1, 1, 1, 1, 1),
		opstest.AttrInts("nodes_nodeids", 0, 1, 2, 0, 1, 2, 3, 4),
		opstest.AttrInts("nodes_featureids", 0, 0, 0, 1, 0, 0, 0, 0),
		opstest.AttrStrings("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "BRANCH_EQ", "LEAF", "LEAF"),
		opstest.AttrFloats("nodes_values", 0.5, 0, 0, 2, 0, 3, 0, 0),
		opstest.AttrInts("nodes_truenodeids", 1, 0, 0, 1, 0, 3, 0, 0),
		opstest.AttrInts("nodes_falsenodeids", 2, 0, 0, 2, 0, 4, 0, 0),
		opstest.AttrInts("nodes_missing_value_tracks_true", 1, 0, 0, 0, 0, 0, 0, 0),
		opstest.AttrInts(prefix+"_treeids", 0, 0, 0, 0, 1, 1, 1, 1),
		opstest.AttrInts(prefix+"_nodeids", 1, 1, 2, 2, 1, 3, 3, 4),
		opstest.AttrInts(prefix+"_ids", 0, 1, 0, 1, 0, 0, 1, 1),
		opstest.AttrFloats(prefix+"_weights", 1, 10, 2, 20, 4, 8, -5, 6),
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
			attrs := append(handTrees("target"), opstest.AttrString("aggregate_function", c.agg), opstest.AttrInt("n_targets", 2))
			if c.base != nil {
				attrs = append(attrs, opstest.AttrFloats("base_values", c.base...))
			}
			y := run(t, node("TreeEnsembleRegressor", opset, 1, attrs...), handX)[0]
			if y.DType != tensor.Float32 || !slices.Equal(y.Shape, []int{3, 2}) || !near(y, c.want, 1e-6) {
				t.Errorf("%s base %v opset %d: got %v %v, want %v", c.agg, c.base, opset, y.Shape, y.Data, c.want)
			}
		}
	}
}

// Opset 3 takes double thresholds and weights as tensors, and inputs of
// every numeric type; one row may come as a vector.
func TestTreeEnsembleRegressorTensorsAndTypes(t *testing.T) {
	attrs := handTrees("target")
	for i, a := range attrs {
		switch a.Name {
		case "nodes_values":
			attrs[i] = opstest.AttrTensor("nodes_values_as_tensor", tensor.From([]int{8}, []float64{0.5, 0, 0, 2, 0, 3, 0, 0}))
		case "target_weights":
			attrs[i] = opstest.AttrTensor("target_weights_as_tensor", tensor.From([]int{8}, []float64{1, 10, 2, 20, 4, 8, -5, 6}))
		}
	}
	attrs = append(attrs, opstest.AttrInt("n_targets", 2), opstest.AttrString("post_transform", "LOGISTIC"))
	y := run(t, node("TreeEnsembleRegressor", 3, 1, attrs...), tensor.From([]int{2}, []int64{3, 5}))[0]
	logistic := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !slices.Equal(y.Shape, []int{1, 2}) || !near(y, []float64{logistic(10), logistic(15)}, 1e-6) {
		t.Errorf("got %v %v", y.Shape, y.Data)
	}
}
