package ml

import (
	"errors"
	"math"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// Every ml operator answers odd inputs — scalars, rank 3, empty
// dimensions, NaN and infinities, huge values — with a result or an
// input error, never a panic or another error.
func TestOddInputs(t *testing.T) {
	f32 := func(shape []int, v ...float32) *tensor.Tensor { return tensor.From(shape, v) }
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	floats := []*tensor.Tensor{
		f32(nil, 1), f32([]int{0}), f32([]int{0, 2}), f32([]int{2, 0}), f32([]int{1, 1, 2}, 1, 2),
		f32([]int{2, 2}, nan, inf, -inf, 3e38), f32([]int{1, 5}, 1, 2, 3, 4, 5), f32([]int{4}, 1e30, -1e30, 0, nan),
	}
	nodes := map[string]opstest.Node{
		"Binarizer":  node("Binarizer", 1, 1),
		"Normalizer": node("Normalizer", 1, 1, opstest.AttrString("norm", "L2")),
		"NormMax":    node("Normalizer", 1, 1),
		"Scaler":     node("Scaler", 1, 1, opstest.AttrFloats("offset", 1, 2), opstest.AttrFloats("scale", 2, 3)),
		"Imputer":    node("Imputer", 1, 1, opstest.AttrFloats("imputed_value_floats", 1, 2)),
		"OneHot":     node("OneHotEncoder", 1, 1, opstest.AttrInts("cats_int64s", 1, 2, 3)),
		"LabelEnc":   node("LabelEncoder", 2, 1, opstest.AttrFloats("keys_floats", 1, 2), opstest.AttrInts("values_int64s", 5, 6)),
		"FeatVec":    node("FeatureVectorizer", 1, 1, opstest.AttrInts("inputdimensions", 3)),
		"LinReg":     node("LinearRegressor", 1, 1, opstest.AttrFloats("coefficients", 1, 2)),
		"LinClass":   node("LinearClassifier", 1, 2, opstest.AttrFloats("coefficients", 1, 2, 3, 4), opstest.AttrFloats("intercepts", 1, 2), opstest.AttrInts("classlabels_ints", 1, 2)),
		"SVR": node("SVMRegressor", 1, 1, opstest.AttrFloats("support_vectors", 1, 0, 0, 1), opstest.AttrFloats("coefficients", 1, -1), opstest.AttrInt("n_supports", 2),
			opstest.AttrFloats("rho", 0.5), opstest.AttrString("kernel_type", "RBF"), opstest.AttrFloats("kernel_params", 1, 0, 2)),
		"SVC": node("SVMClassifier", 1, 2, opstest.AttrFloats("support_vectors", 1, 0, 0, 1), opstest.AttrInts("vectors_per_class", 1, 1),
			opstest.AttrFloats("coefficients", 1, -1), opstest.AttrFloats("rho", 0.5), opstest.AttrInts("classlabels_ints", 7, 9), opstest.AttrFloats("prob_a", -1), opstest.AttrFloats("prob_b", 0),
			opstest.AttrString("kernel_type", "POLY"), opstest.AttrFloats("kernel_params", 1, 0, 3)),
		"TreeReg":   node("TreeEnsembleRegressor", 3, 1, append(handTrees("target"), opstest.AttrInt("n_targets", 2), opstest.AttrString("post_transform", "PROBIT"))...),
		"TreeClass": node("TreeEnsembleClassifier", 3, 2, append(handTrees("class"), opstest.AttrInts("classlabels_int64s", 1, 2), opstest.AttrString("post_transform", "SOFTMAX_ZERO"))...),
		"Tree5":     node("TreeEnsemble", 5, 1, v5Attrs(3, 3)...),
	}
	for name, n := range nodes {
		if err := compileErr(n, 1); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, x := range floats {
			out, err := opstest.Run(t, n, x)
			if err != nil && !errors.Is(err, ops.ErrInput) {
				t.Errorf("%s of %v %v: %v, want a result or an input error", name, x.Shape, x.Data, err)
			}
			for _, y := range out {
				if n, err := tensor.NumElements(y.Shape); err != nil || n != y.Len() {
					t.Errorf("%s of %v: output shape %v holds %d values", name, x.Shape, y.Shape, y.Len())
				}
			}
		}
	}
	// Index and string inputs.
	n := node("ArrayFeatureExtractor", 1, 1)
	for _, x := range floats {
		for _, idx := range []*tensor.Tensor{tensor.From([]int{0}, []int64{}), tensor.From([]int{2, 1}, []int64{0, 1}), tensor.Scalar(int64(math.MaxInt64)), tensor.Scalar(int64(math.MinInt64))} {
			if err := runErr(t, n, x, idx); err != nil && !errors.Is(err, ops.ErrInput) {
				t.Errorf("ArrayFeatureExtractor of %v by %v: %v", x.Shape, idx.Data, err)
			}
		}
	}
}
