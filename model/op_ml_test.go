package model_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// one builds and loads a one-node ai.onnx.ml model.
func one(t *testing.T, opset int64, op string, ins, outs []mlIO, attrs ...*onnxpb.Attribute) *model.Model {
	t.Helper()
	var in, out []string
	for _, io := range ins {
		in = append(in, io.name)
	}
	for _, io := range outs {
		out = append(out, io.name)
	}
	return mlMustLoad(t, mlDomain, opset, ins, outs, mlNode(op, in, out, attrs...))
}

func runErr(m *model.Model, in map[string]*tensor.Tensor) error {
	_, err := m.Run(context.Background(), in, nil)
	return err
}

func TestLinearClassifier(t *testing.T) {
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, -4})
	// Binary: one row of coefficients, s = x·[1, 1] − 1: rows 2 and −2.
	m := one(t, 1, "LinearClassifier", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)},
		mlFloats("coefficients", 1, 1), mlFloats("intercepts", -1), mlInts("classlabels_ints", 5, 6))
	out := mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	if !slices.Equal(out["Y"].Data.([]int64), []int64{6, 5}) || !mlClose(out["Z"], []float64{-1, 2, 3, -2}, 1e-6) {
		t.Errorf("binary NONE: %v %v", out["Y"].Data, out["Z"].Data)
	}
	m = one(t, 1, "LinearClassifier", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)},
		mlFloats("coefficients", 1, 1), mlFloats("intercepts", -1), mlInts("classlabels_ints", 5, 6), mlStr("post_transform", "LOGISTIC"))
	out = mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !slices.Equal(out["Y"].Data.([]int64), []int64{6, 5}) || !mlClose(out["Z"], []float64{sig(-2), sig(2), sig(2), sig(-2)}, 1e-6) {
		t.Errorf("binary LOGISTIC: %v %v", out["Y"].Data, out["Z"].Data)
	}
	// Three classes, string labels, softmax: scores x0, x1, x0+x1.
	m = one(t, 1, "LinearClassifier", []mlIO{mlV("X", tensor.Float64, -1, 2)}, []mlIO{mlV("Y", tensor.String, -1), mlV("Z", tensor.Float32, -1, 3)},
		mlFloats("coefficients", 1, 0, 0, 1, 1, 1), mlFloats("intercepts", 0, 0, 0), mlStrs("classlabels_strings", "a", "b", "c"), mlStr("post_transform", "SOFTMAX"))
	out = mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 2}, []float64{1, 2, 3, -4})})
	soft := func(v ...float64) []float64 {
		s := 0.0
		for _, e := range v {
			s += math.Exp(e)
		}
		for i := range v {
			v[i] = math.Exp(v[i]) / s
		}
		return v
	}
	if got := out["Y"].Data.([]string); strings.Join(got, "") != "ca" || !mlClose(out["Z"], append(soft(1, 2, 3), soft(3, -4, -1)...), 1e-6) {
		t.Errorf("softmax: %v %v", got, out["Z"].Data)
	}
	// Without intercepts, X's width says how many rows of coefficients
	// there are: four coefficients over four features are one binary row.
	m4 := one(t, 1, "LinearClassifier", []mlIO{mlV("X", tensor.Float32, -1, 4)}, []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)},
		mlFloats("coefficients", 1, 1, 1, 1), mlInts("classlabels_ints", 0, 1))
	out = mlRun(t, m4, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 4}, []float32{1, 1, 1, 1})})
	if !slices.Equal(out["Y"].Data.([]int64), []int64{1}) || !mlClose(out["Z"], []float64{-3, 4}, 1e-6) {
		t.Errorf("binary without intercepts: %v %v", out["Y"].Data, out["Z"].Data)
	}
	// The features must match the coefficients.
	if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 3}, []float64{1, 2, 3})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("three features: %v", err)
	}
	if _, err := mlLoad(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1)},
		mlNode("LinearClassifier", []string{"X"}, []string{"Y"}, mlFloats("coefficients", 1, 1), mlInts("classlabels_ints", 1, 2), mlStrs("classlabels_strings", "a", "b"))); err == nil {
		t.Error("both kinds of labels loaded")
	}
}

func TestLinearRegressor(t *testing.T) {
	m := one(t, 1, "LinearRegressor", []mlIO{mlV("X", tensor.Int32, -1, 3)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
		mlFloats("coefficients", 1, 2, 3, -1, 0, 1), mlFloats("intercepts", 10, 20), mlInt("targets", 2))
	y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 3}, []int32{1, 1, 1, 2, 0, -1})})["Y"]
	if !mlClose(y, []float64{16, 20, 9, 17}, 1e-6) {
		t.Errorf("got %v", y.Data)
	}
	if _, err := mlLoad(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 3)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
		mlNode("LinearRegressor", []string{"X"}, []string{"Y"}, mlFloats("coefficients", 1, 2, 3), mlInt("targets", 2))); err == nil {
		t.Error("3 coefficients for 2 targets loaded")
	}
}

// Support vectors e0 = [1, 0], e1 = [0, 1], coefficients [1, −1], rho 0.5,
// gamma 0.5, coef0 1, degree 2; x = [1, 2]: x·e0 = 1, x·e1 = 2,
// |x−e0|² = 4, |x−e1|² = 2.
func TestSVMRegressorKernels(t *testing.T) {
	for kern, want := range map[string]float64{
		"LINEAR":  1 - 2 + 0.5,
		"POLY":    math.Pow(0.5*1+1, 2) - math.Pow(0.5*2+1, 2) + 0.5,
		"RBF":     math.Exp(-0.5*4) - math.Exp(-0.5*2) + 0.5,
		"SIGMOID": math.Tanh(0.5*1+1) - math.Tanh(0.5*2+1) + 0.5,
	} {
		for _, oc := range []int64{0, 1} {
			m := one(t, 1, "SVMRegressor", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 1)},
				mlFloats("support_vectors", 1, 0, 0, 1), mlFloats("coefficients", 1, -1), mlInt("n_supports", 2), mlFloats("rho", 0.5),
				mlStr("kernel_type", kern), mlFloats("kernel_params", 0.5, 1, 2), mlInt("one_class", oc))
			y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 2}, []float32{1, 2})})["Y"]
			w := want
			if oc == 1 {
				w = map[bool]float64{true: 1, false: -1}[want > 0]
			}
			if !equalInts(y.Shape, 1, 1) || !mlClose(y, []float64{w}, 1e-6) {
				t.Errorf("%s one_class %d: got %v, want %v", kern, oc, y.Data, w)
			}
		}
	}
	// Without support vectors: liblinear's x·coefficients + rho.
	m := one(t, 1, "SVMRegressor", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 1)},
		mlFloats("coefficients", 2, 3), mlFloats("rho", 1))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 2}, []float32{1, 2})})["Y"]; !mlClose(y, []float64{9}, 1e-6) {
		t.Errorf("linear mode: %v", y.Data)
	}
}

func TestSVMClassifier(t *testing.T) {
	// Two classes, one support vector each (e0, e1), linear kernel:
	// s = 0.5 + x0 − x1 > 0 votes class 0. Scores are [−s, s].
	attrs := []*onnxpb.Attribute{mlFloats("support_vectors", 1, 0, 0, 1), mlInts("vectors_per_class", 1, 1),
		mlFloats("coefficients", 1, -1), mlFloats("rho", 0.5), mlInts("classlabels_ints", 7, 9)}
	x := tensor.From([]int{2, 2}, []float32{1, 2, 3, 1})
	m := one(t, 1, "SVMClassifier", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)}, attrs...)
	out := mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	if !slices.Equal(out["Y"].Data.([]int64), []int64{9, 7}) || !mlClose(out["Z"], []float64{0.5, -0.5, -2.5, 2.5}, 1e-6) {
		t.Errorf("binary: %v %v", out["Y"].Data, out["Z"].Data)
	}
	// With Platt's coefficients A = −1, B = 0, P(class 0) = σ(s), and
	// two-class coupling returns the pair itself.
	m = one(t, 1, "SVMClassifier", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1), mlV("Z", tensor.Float32, -1, 2)},
		append(attrs, mlFloats("prob_a", -1), mlFloats("prob_b", 0))...)
	out = mlRun(t, m, map[string]*tensor.Tensor{"X": x})
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	if !slices.Equal(out["Y"].Data.([]int64), []int64{9, 7}) || !mlClose(out["Z"], []float64{sig(-0.5), sig(0.5), sig(2.5), sig(-2.5)}, 5e-3) {
		t.Errorf("probabilities: %v %v", out["Y"].Data, out["Z"].Data)
	}
	// Three classes, support vectors e0, e1, e2, coefficients chosen so
	// that s01 = x0−x1, s02 = x0−x2, s12 = x1−x2: the largest feature
	// wins the vote.
	m = one(t, 1, "SVMClassifier", []mlIO{mlV("X", tensor.Float32, -1, 3)}, []mlIO{mlV("Y", tensor.String, -1), mlV("Z", tensor.Float32, -1, 3)},
		mlFloats("support_vectors", 1, 0, 0, 0, 1, 0, 0, 0, 1), mlInts("vectors_per_class", 1, 1, 1),
		mlFloats("coefficients", 1, -1, -1, 1, 1, -1), mlFloats("rho", 0, 0, 0), mlStrs("classlabels_strings", "x", "y", "z"))
	out = mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 3}, []float32{0, 5, 1, 2, 1, 3})})
	if got := out["Y"].Data.([]string); strings.Join(got, "") != "yz" || !mlClose(out["Z"], []float64{-5, -1, 4, 1, -1, -2}, 1e-6) {
		t.Errorf("three classes: %v %v", got, out["Z"].Data)
	}
	if _, err := mlLoad(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Int64, -1)},
		mlNode("SVMClassifier", []string{"X"}, []string{"Y"}, mlFloats("support_vectors", 1, 0, 0, 1), mlInts("vectors_per_class", 1, 1),
			mlFloats("coefficients", 1), mlFloats("rho", 0.5), mlInts("classlabels_ints", 7, 9))); err == nil {
		t.Error("too few coefficients loaded")
	}
}

func TestNormalizer(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int64{1, 2, 4, -1, -2, 0})
	for norm, want := range map[string][]float64{
		"MAX": {0.25, 0.5, 1, -1, -2, 0}, // the second row's maximum is 0: unchanged
		"L1":  {1.0 / 7, 2.0 / 7, 4.0 / 7, -1.0 / 3, -2.0 / 3, 0},
		"L2":  {1 / math.Sqrt(21), 2 / math.Sqrt(21), 4 / math.Sqrt(21), -1 / math.Sqrt(5), -2 / math.Sqrt(5), 0},
	} {
		m := one(t, 1, "Normalizer", []mlIO{mlV("X", tensor.Int64, -1, 3)}, []mlIO{mlV("Y", tensor.Float32, -1, 3)}, mlStr("norm", norm))
		if y := mlRun(t, m, map[string]*tensor.Tensor{"X": x})["Y"]; !mlClose(y, want, 1e-6) {
			t.Errorf("%s: got %v, want %v", norm, y.Data, want)
		}
	}
	// L2 of huge values neither overflows nor underflows.
	m := one(t, 1, "Normalizer", []mlIO{mlV("X", tensor.Float64, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)}, mlStr("norm", "L2"))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 2}, []float64{3e300, 4e300, 3e-300, 4e-300})})["Y"]; !mlClose(y, []float64{0.6, 0.8, 0.6, 0.8}, 1e-6) {
		t.Errorf("extreme L2: %v", y.Data)
	}
}

func TestScalerImputerBinarizer(t *testing.T) {
	m := one(t, 1, "Scaler", []mlIO{mlV("X", tensor.Int64, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)}, mlFloats("offset", 1, 2), mlFloats("scale", 2, 0.5))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 2}, []int64{3, 4, 0, 0})})["Y"]; !mlClose(y, []float64{4, 1, -2, -1}, 1e-6) {
		t.Errorf("Scaler: %v", y.Data)
	}
	if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 3}, []int64{3, 4, 5})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("Scaler of 3 features: %v", err)
	}
	nan := float32(math.NaN())
	m = one(t, 1, "Imputer", []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
		mlFloats("imputed_value_floats", 7, 8), mlFloat("replaced_value_float", nan))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 2}, []float32{nan, 1, 2, nan})})["Y"]; !mlClose(y, []float64{7, 1, 2, 8}, 0) {
		t.Errorf("Imputer of NaN: %v", y.Data)
	}
	m = one(t, 1, "Imputer", []mlIO{mlV("X", tensor.Int64, -1)}, []mlIO{mlV("Y", tensor.Int64, -1)},
		mlInts("imputed_value_int64s", 0), mlInt("replaced_value_int64", -1))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []int64{-1, 5, -1})})["Y"]; !slices.Equal(y.Data.([]int64), []int64{0, 5, 0}) {
		t.Errorf("Imputer of -1: %v", y.Data)
	}
	if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{1}, []float32{1})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("Imputer of a float for integers: %v", err)
	}
	m = one(t, 1, "Binarizer", []mlIO{mlV("X", tensor.Int64, -1)}, []mlIO{mlV("Y", tensor.Int64, -1)}, mlFloat("threshold", 2))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{4}, []int64{1, 2, 3, -7})})["Y"]; !slices.Equal(y.Data.([]int64), []int64{0, 0, 1, 0}) {
		t.Errorf("Binarizer: %v", y.Data)
	}
}

func TestOneHotEncoder(t *testing.T) {
	m := one(t, 1, "OneHotEncoder", []mlIO{mlV("X", tensor.Float64, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2, 3)}, mlInts("cats_int64s", 4, 2, 9))
	y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{1, 2}, []float64{2, 5})})["Y"]
	if !equalInts(y.Shape, 1, 2, 3) || !mlClose(y, []float64{0, 1, 0, 0, 0, 0}, 0) {
		t.Errorf("ints: %v %v", y.Shape, y.Data)
	}
	m = one(t, 1, "OneHotEncoder", []mlIO{mlV("X", tensor.String, -1)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)}, mlStrs("cats_strings", "a", "b"), mlInt("zeros", 0))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2}, []string{"b", "a"})})["Y"]; !mlClose(y, []float64{0, 1, 1, 0}, 0) {
		t.Errorf("strings: %v", y.Data)
	}
	if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{1}, []string{"c"})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("unknown category with zeros=0: %v", err)
	}
}

func TestCategoryMapperAndLabelEncoders(t *testing.T) {
	cm := []*onnxpb.Attribute{mlStrs("cats_strings", "a", "b", "a"), mlInts("cats_int64s", 1, 2, 3), mlInt("default_int64", -9), mlStr("default_string", "?")}
	m := one(t, 1, "CategoryMapper", []mlIO{mlV("X", tensor.String, -1)}, []mlIO{mlV("Y", tensor.Int64, -1)}, cm...)
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []string{"b", "z", "a"})})["Y"]; !slices.Equal(y.Data.([]int64), []int64{2, -9, 3}) {
		t.Errorf("CategoryMapper strings→ints: %v (a repeated key maps to its last value)", y.Data)
	}
	m = one(t, 1, "CategoryMapper", []mlIO{mlV("X", tensor.Int64, -1)}, []mlIO{mlV("Y", tensor.String, -1)}, cm...)
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []int64{3, 2, 0})})["Y"]; strings.Join(y.Data.([]string), ",") != "a,b,?" {
		t.Errorf("CategoryMapper ints→strings: %v", y.Data)
	}
	// LabelEncoder-1: classes by position, either way.
	m = one(t, 1, "LabelEncoder", []mlIO{mlV("X", tensor.Int64, 2, 2)}, []mlIO{mlV("Y", tensor.String, 2, 2)}, mlStrs("classes_strings", "x", "y"))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 2}, []int64{1, 0, 2, -1})})["Y"]; strings.Join(y.Data.([]string), ",") != "y,x,_Unused,_Unused" || !equalInts(y.Shape, 2, 2) {
		t.Errorf("LabelEncoder-1: %v %v", y.Shape, y.Data)
	}
	// LabelEncoder-2: float keys (NaN matches NaN) to strings.
	nan := float32(math.NaN())
	m = one(t, 2, "LabelEncoder", []mlIO{mlV("X", tensor.Float32, -1)}, []mlIO{mlV("Y", tensor.String, -1)},
		mlFloats("keys_floats", 1, 2, nan), mlStrs("values_strings", "one", "two", "nan"), mlStr("default_string", "none"))
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{4}, []float32{2, nan, 3, 1})})["Y"]; strings.Join(y.Data.([]string), ",") != "two,nan,none,one" {
		t.Errorf("LabelEncoder-2: %v", y.Data)
	}
	// LabelEncoder-4: tensor keys and values; the default is -1 for
	// integer values when default_tensor is absent; a repeated key takes
	// its last value.
	m = one(t, 4, "LabelEncoder", []mlIO{mlV("X", tensor.Int32, -1)}, []mlIO{mlV("Y", tensor.Float64, -1)},
		mlTensor("keys_tensor", tensor.From([]int{3}, []int32{5, 6, 5})), mlTensor("values_tensor", tensor.From([]int{3}, []float64{0.5, 0.25, 0.75})))
	y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []int32{6, 5, 7})})["Y"]
	if !slices.Equal(y.Data.([]float64), []float64{0.25, 0.75, 0}) || !math.Signbit(y.Data.([]float64)[2]) {
		t.Errorf("LabelEncoder-4: %v (want the default −0.0 last)", y.Data)
	}
	if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{1}, []int64{6})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("INT64 input to INT32 keys: %v", err)
	}
	boolValues := &tensor.Tensor{DType: tensor.Bool, Shape: []int{1}, Data: []bool{true}}
	if _, err := mlLoad(mlDomain, 4, []mlIO{mlV("X", tensor.String, -1)}, []mlIO{mlV("Y", tensor.Bool, -1)},
		mlNode("LabelEncoder", []string{"X"}, []string{"Y"}, mlStrs("keys_strings", "a"), mlTensor("values_tensor", boolValues),
			mlTensor("default_tensor", boolValues))); !errors.Is(err, model.ErrUnsupported) {
		t.Errorf("BOOL values: %v, want unsupported", err)
	}
	if _, err := mlLoad(mlDomain, 2, []mlIO{mlV("X", tensor.String, -1)}, []mlIO{mlV("Y", tensor.Int64, -1)},
		mlNode("LabelEncoder", []string{"X"}, []string{"Y"}, mlStrs("keys_strings", "a", "b"), mlInts("values_int64s", 1))); err == nil {
		t.Error("2 keys for 1 value loaded")
	}
	if _, err := mlLoad(mlDomain, 2, []mlIO{mlV("X", tensor.String, -1)}, []mlIO{mlV("Y", tensor.Int64, -1)},
		mlNode("LabelEncoder", []string{"X"}, []string{"Y"}, mlTensor("keys_tensor", tensor.From([]int{1}, []string{"a"})), mlInts("values_int64s", 1))); err == nil {
		t.Error("a tensor attribute at opset 2 loaded")
	}
}

func TestFeatureVectorizerAndArrayFeatureExtractor(t *testing.T) {
	m := one(t, 1, "FeatureVectorizer", []mlIO{mlV("A", tensor.Int64, -1, 3), mlV("B", tensor.Float32, -1, 1)}, []mlIO{mlV("Y", tensor.Float32, -1, 4)},
		mlInts("inputdimensions", 2, 2))
	// A is cut to 2 columns, B padded to 2.
	y := mlRun(t, m, map[string]*tensor.Tensor{"A": tensor.From([]int{2, 3}, []int64{1, 2, 3, 4, 5, 6}), "B": tensor.From([]int{2, 1}, []float32{7, 8})})["Y"]
	if !equalInts(y.Shape, 2, 4) || !mlClose(y, []float64{1, 2, 7, 0, 4, 5, 8, 0}, 0) {
		t.Errorf("FeatureVectorizer: %v %v", y.Shape, y.Data)
	}
	if err := runErr(m, map[string]*tensor.Tensor{"A": tensor.From([]int{1, 3}, []int64{1, 2, 3}), "B": tensor.From([]int{2, 1}, []float32{7, 8})}); !errors.Is(err, model.ErrInput) {
		t.Errorf("rows differ: %v", err)
	}
	m = one(t, 1, "ArrayFeatureExtractor", []mlIO{mlV("X", tensor.String, nil...), mlV("I", tensor.Int64, -1)}, []mlIO{mlV("Y", tensor.String, nil...)})
	y = mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []string{"a", "b", "c"}), "I": tensor.From([]int{2}, []int64{2, 0})})["Y"]
	if !equalInts(y.Shape, 1, 2) || strings.Join(y.Data.([]string), "") != "ca" {
		t.Errorf("ArrayFeatureExtractor of a vector: %v %v", y.Shape, y.Data)
	}
	y = mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 1, 2}, []string{"a", "b", "c", "d"}), "I": tensor.From([]int{3}, []int64{1, 1, 0})})["Y"]
	if !equalInts(y.Shape, 2, 1, 3) || strings.Join(y.Data.([]string), "") != "bbaddc" {
		t.Errorf("ArrayFeatureExtractor of rank 3: %v %v", y.Shape, y.Data)
	}
	for _, idx := range []int64{3, -1} {
		if err := runErr(m, map[string]*tensor.Tensor{"X": tensor.From([]int{3}, []string{"a", "b", "c"}), "I": tensor.From([]int{1}, []int64{idx})}); !errors.Is(err, model.ErrInput) {
			t.Errorf("index %d: %v", idx, err)
		}
	}
}

// ZipMap's sequence of maps cannot be served, nor DictVectorizer's map:
// the model is refused at load, saying why.
func TestZipMapRefused(t *testing.T) {
	_, err := mlLoad(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
		mlNode("ZipMap", []string{"X"}, []string{"Y"}, mlInts("classlabels_int64s", 0, 1)))
	if !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "sequence of maps") {
		t.Errorf("ZipMap: %v", err)
	}
	_, err = mlLoad(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 2)}, []mlIO{mlV("Y", tensor.Float32, -1, 2)},
		mlNode("DictVectorizer", []string{"X"}, []string{"Y"}, mlStrs("string_vocabulary", "a", "b")))
	if !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "reads a map") {
		t.Errorf("DictVectorizer: %v", err)
	}
}

// A model importing only ai.onnx.ml loads; an ai.onnx node in it is
// refused for its domain.
func TestMLOnlyModelDomains(t *testing.T) {
	b := onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Domain: mlDomain, Version: 1}},
		Graph: &onnxpb.Graph{Nodes: []*onnxpb.Node{{OpType: "Binarizer", Domain: mlDomain, Inputs: []string{"X"}, Outputs: []string{"Y"}}},
			Inputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("X", tensor.Float32, 2))}, Outputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("Y", tensor.Float32, 2))}}})
	m, err := model.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if y := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2}, []float32{-1, 1})})["Y"]; !mlClose(y, []float64{0, 1}, 0) {
		t.Errorf("Binarizer: %v", y.Data)
	}
	b = onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Domain: mlDomain, Version: 1}},
		Graph: &onnxpb.Graph{Nodes: []*onnxpb.Node{{OpType: "Relu", Inputs: []string{"X"}, Outputs: []string{"Y"}}},
			Inputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("X", tensor.Float32, 2))}, Outputs: []*onnxpb.ValueInfo{mlValueInfo(mlV("Y", tensor.Float32, 2))}}})
	if _, err := model.Load(b); !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "imports no opset") {
		t.Errorf("ai.onnx node without an ai.onnx import: %v", err)
	}
}

// Every ml operator answers odd inputs — scalars, rank 3, empty
// dimensions, NaN and infinities, huge values — with a result or an
// input error, never a panic or another error.
func TestMLOpsOddInputs(t *testing.T) {
	f32 := func(shape []int, v ...float32) *tensor.Tensor { return tensor.From(shape, v) }
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	floats := []*tensor.Tensor{
		f32(nil, 1), f32([]int{0}), f32([]int{0, 2}), f32([]int{2, 0}), f32([]int{1, 1, 2}, 1, 2),
		f32([]int{2, 2}, nan, inf, -inf, 3e38), f32([]int{1, 5}, 1, 2, 3, 4, 5), f32([]int{4}, 1e30, -1e30, 0, nan),
	}
	u := []mlIO{mlV("X", tensor.Float32, nil...)}
	o1 := []mlIO{mlV("Y", tensor.Float32, nil...)}
	o2 := []mlIO{mlV("Y", tensor.Int64, nil...), mlV("Z", tensor.Float32, nil...)}
	models := map[string]*model.Model{
		"Binarizer":  one(t, 1, "Binarizer", u, o1),
		"Normalizer": one(t, 1, "Normalizer", u, o1, mlStr("norm", "L2")),
		"NormMax":    one(t, 1, "Normalizer", u, o1),
		"Scaler":     one(t, 1, "Scaler", u, o1, mlFloats("offset", 1, 2), mlFloats("scale", 2, 3)),
		"Imputer":    one(t, 1, "Imputer", u, o1, mlFloats("imputed_value_floats", 1, 2)),
		"OneHot":     one(t, 1, "OneHotEncoder", u, o1, mlInts("cats_int64s", 1, 2, 3)),
		"LabelEnc":   one(t, 2, "LabelEncoder", u, []mlIO{mlV("Y", tensor.Int64, nil...)}, mlFloats("keys_floats", 1, 2), mlInts("values_int64s", 5, 6)),
		"FeatVec":    one(t, 1, "FeatureVectorizer", u, o1, mlInts("inputdimensions", 3)),
		"LinReg":     one(t, 1, "LinearRegressor", u, o1, mlFloats("coefficients", 1, 2)),
		"LinClass":   one(t, 1, "LinearClassifier", u, o2, mlFloats("coefficients", 1, 2, 3, 4), mlFloats("intercepts", 1, 2), mlInts("classlabels_ints", 1, 2)),
		"SVR":        one(t, 1, "SVMRegressor", u, o1, mlFloats("support_vectors", 1, 0, 0, 1), mlFloats("coefficients", 1, -1), mlInt("n_supports", 2), mlFloats("rho", 0.5), mlStr("kernel_type", "RBF"), mlFloats("kernel_params", 1, 0, 2)),
		"SVC": one(t, 1, "SVMClassifier", u, o2, mlFloats("support_vectors", 1, 0, 0, 1), mlInts("vectors_per_class", 1, 1),
			mlFloats("coefficients", 1, -1), mlFloats("rho", 0.5), mlInts("classlabels_ints", 7, 9), mlFloats("prob_a", -1), mlFloats("prob_b", 0), mlStr("kernel_type", "POLY"), mlFloats("kernel_params", 1, 0, 3)),
		"TreeReg":   one(t, 3, "TreeEnsembleRegressor", u, o1, append(handTrees("target"), mlInt("n_targets", 2), mlStr("post_transform", "PROBIT"))...),
		"TreeClass": one(t, 3, "TreeEnsembleClassifier", u, o2, append(handTrees("class"), mlInts("classlabels_int64s", 1, 2), mlStr("post_transform", "SOFTMAX_ZERO"))...),
		"Tree5":     one(t, 5, "TreeEnsemble", u, o1, v5Attrs(3, 3)...),
	}
	for name, m := range models {
		for _, x := range floats {
			out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": x}, nil)
			if err != nil && !errors.Is(err, model.ErrInput) {
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
	m := one(t, 1, "ArrayFeatureExtractor", []mlIO{mlV("X", tensor.Float32, nil...), mlV("I", tensor.Int64, nil...)}, o1)
	for _, x := range floats {
		for _, idx := range []*tensor.Tensor{tensor.From([]int{0}, []int64{}), tensor.From([]int{2, 1}, []int64{0, 1}), tensor.Scalar(int64(math.MaxInt64)), tensor.Scalar(int64(math.MinInt64))} {
			if err := runErr(m, map[string]*tensor.Tensor{"X": x, "I": idx}); err != nil && !errors.Is(err, model.ErrInput) {
				t.Errorf("ArrayFeatureExtractor of %v by %v: %v", x.Shape, idx.Data, err)
			}
		}
	}
}

// A scikit-learn style pipeline: imputer, scaler and classifier from
// ai.onnx.ml, an ai.onnx node after them, both domains imported.
func TestMLPipeline(t *testing.T) {
	nodes := []*onnxpb.Node{
		mlNode("Imputer", []string{"X"}, []string{"imputed"}, mlFloats("imputed_value_floats", 0, 1, 2), mlFloat("replaced_value_float", float32(math.NaN()))),
		mlNode("Scaler", []string{"imputed"}, []string{"scaled"}, mlFloats("offset", 1, 1, 1), mlFloats("scale", 1, 2, 3)),
		mlNode("LinearClassifier", []string{"scaled"}, []string{"label", "scores"}, mlFloats("coefficients", 1, 0, 0, 0, 1, 0, 0, 0, 1),
			mlFloats("intercepts", 0, 0, 0), mlStrs("classlabels_strings", "a", "b", "c")),
		{OpType: "Identity", Domain: "ai.onnx", Inputs: []string{"scores"}, Outputs: []string{"probabilities"}},
	}
	b := mlModelBytes(mlDomain, 1, []mlIO{mlV("X", tensor.Float32, -1, 3)}, []mlIO{mlV("label", tensor.String, -1), mlV("probabilities", tensor.Float32, -1, 3)}, nil, nodes...)
	m, err := model.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	// [NaN, 2, 1] → imputed [0, 2, 1] → scaled [−1, 2, 0]; [4, 0, 2] →
	// [3, −2, 3]: the first of two equal scores wins.
	out := mlRun(t, m, map[string]*tensor.Tensor{"X": tensor.From([]int{2, 3}, []float32{float32(math.NaN()), 2, 1, 4, 0, 2})})
	if got := out["label"].Data.([]string); strings.Join(got, ",") != "b,a" || !mlClose(out["probabilities"], []float64{-1, 2, 0, 3, -2, 3}, 1e-6) {
		t.Errorf("got %v %v", got, out["probabilities"].Data)
	}
}
