package ml

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// v5Attrs are the attributes of the trees of TestTreeEnsembleV5:
// branches by position, leaves by position, one BRANCH_MEMBER node.
//
//	tree 0 (root 0): x0 <= 1 ? (x1 in {2, 5} ? leaf0 : leaf1) : leaf2
//	tree 1 (root 2): a single leaf (both branches go to leaf3)
func v5Attrs(agg, post int64) []*onnxpb.Attribute {
	modes := &tensor.Tensor{DType: tensor.Uint8, Shape: []int{3}, Data: []uint8{0, 6, 0}}
	return []*onnxpb.Attribute{
		opstest.AttrInts("nodes_featureids", 0, 1, 0), opstest.AttrTensor("nodes_modes", modes),
		opstest.AttrTensor("nodes_splits", tensor.From([]int{3}, []float64{1, 0, 0})),
		opstest.AttrInts("nodes_truenodeids", 1, 0, 3), opstest.AttrInts("nodes_trueleafs", 0, 1, 1),
		opstest.AttrInts("nodes_falsenodeids", 2, 1, 3), opstest.AttrInts("nodes_falseleafs", 1, 1, 1),
		opstest.AttrTensor("membership_values", tensor.From([]int{3}, []float64{5, 2, math.NaN()})),
		opstest.AttrInts("leaf_targetids", 0, 1, 0, 1), opstest.AttrTensor("leaf_weights", tensor.From([]int{4}, []float64{1, 2, 4, 8})),
		opstest.AttrInts("tree_roots", 0, 2), opstest.AttrInt("n_targets", 2), opstest.AttrInt("aggregate_function", agg), opstest.AttrInt("post_transform", post),
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
		y := run(t, node("TreeEnsemble", 5, 1, v5Attrs(c.agg, 0)...), x)[0]
		if y.DType != tensor.Float64 || !near(y, c.want, 1e-12) {
			t.Errorf("aggregate %d: got %v, want %v", c.agg, y.Data, c.want)
		}
	}
	// FP16 in, FP16 out.
	x16 := tensor.From([]int{1, 2}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 5}))
	if y := run(t, node("TreeEnsemble", 5, 1, v5Attrs(1, 0)...), x16)[0]; y.DType != tensor.Float16 || !near(y, []float64{1, 8}, 0) {
		t.Errorf("FP16: got %v %v", y.DType, y.Data)
	}
	// post_transform 1 is SOFTMAX, 2 LOGISTIC; FP32 in, FP32 out.
	x32 := tensor.From([]int{1, 2}, []float32{7, 2})
	for post, want := range map[int64][]float64{
		1: {math.Exp(4) / (math.Exp(4) + math.Exp(8)), math.Exp(8) / (math.Exp(4) + math.Exp(8))},
		2: {1 / (1 + math.Exp(-4)), 1 / (1 + math.Exp(-8))},
	} {
		if y := run(t, node("TreeEnsemble", 5, 1, v5Attrs(1, post)...), x32)[0]; y.DType != tensor.Float32 || !near(y, want, 1e-6) {
			t.Errorf("post_transform %d: got %v, want %v", post, y.Data, want)
		}
	}
}
