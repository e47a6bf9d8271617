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
		"Normalizer": node("Normalizer", 1, 1, attrStr("norm", "L2")),
		"NormMax":    node("Normalizer", 1, 1),
		"Scaler":     node("Scaler", 1, 1, attrFloats("offset", 1, 2), attrFloats("scale", 2, 3)),
		"Imputer":    node("Imputer", 1, 1, attrFloats("imputed_value_floats", 1, 2)),
		"OneHot":     node("OneHotEncoder", 1, 1, attrInts("cats_int64s", 1, 2, 3)),
		"LabelEnc":   node("LabelEncoder", 2, 1, attrFloats("keys_floats", 1, 2), attrInts("values_int64s", 5, 6)),
		"FeatVec":    node("FeatureVectorizer", 1, 1, attrInts("inputdimensions", 3)),
		"LinReg":     node("LinearRegressor", 1, 1, attrFloats("coefficients", 1, 2)),
		"LinClass":   node("LinearClassifier", 1, 2, attrFloats("coefficients", 1, 2, 3, 4), attrFloats("intercepts", 1, 2), attrInts("classlabels_ints", 1, 2)),
		"SVR": node("SVMRegressor", 1, 1, attrFloats("support_vectors", 1, 0, 0, 1), attrFloats("coefficients", 1, -1), attrInt("n_supports", 2),
			attrFloats("rho", 0.5), attrStr("kernel_type", "RBF"), attrFloats("kernel_params", 1, 0, 2)),
		"SVC": node("SVMClassifier", 1, 2, attrFloats("support_vectors", 1, 0, 0, 1), attrInts("vectors_per_class", 1, 1),
			attrFloats("coefficients", 1, -1), attrFloats("rho", 0.5), attrInts("classlabels_ints", 7, 9), attrFloats("prob_a", -1), attrFloats("prob_b", 0),
			attrStr("kernel_type", "POLY"), attrFloats("kernel_params", 1, 0, 3)),
		"TreeReg":   node("TreeEnsembleRegressor", 3, 1, append(handTrees("target"), attrInt("n_targets", 2), attrStr("post_transform", "PROBIT"))...),
		"TreeClass": node("TreeEnsembleClassifier", 3, 2, append(handTrees("class"), attrInts("classlabels_int64s", 1, 2), attrStr("post_transform", "SOFTMAX_ZERO"))...),
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
