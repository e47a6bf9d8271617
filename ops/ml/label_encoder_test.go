package ml

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestCategoryMapperAndLabelEncoders(t *testing.T) {
	cm := []*onnxpb.Attribute{opstest.AttrStrings("cats_strings", "a", "b", "a"), opstest.AttrInts("cats_int64s", 1, 2, 3), opstest.AttrInt("default_int64", -9), opstest.AttrString("default_string", "?")}
	if y := run(t, node("CategoryMapper", 1, 1, cm...), tensor.From([]int{3}, []string{"b", "z", "a"}))[0]; !slices.Equal(y.Data.([]int64), []int64{2, -9, 3}) {
		t.Errorf("CategoryMapper strings→ints: %v (a repeated key maps to its last value)", y.Data)
	}
	if y := run(t, node("CategoryMapper", 1, 1, cm...), tensor.From([]int{3}, []int64{3, 2, 0}))[0]; strings.Join(y.Data.([]string), ",") != "a,b,?" {
		t.Errorf("CategoryMapper ints→strings: %v", y.Data)
	}
	// LabelEncoder-1: classes by position, either way.
	y := run(t, node("LabelEncoder", 1, 1, opstest.AttrStrings("classes_strings", "x", "y")), tensor.From([]int{2, 2}, []int64{1, 0, 2, -1}))[0]
	if strings.Join(y.Data.([]string), ",") != "y,x,_Unused,_Unused" || !slices.Equal(y.Shape, []int{2, 2}) {
		t.Errorf("LabelEncoder-1: %v %v", y.Shape, y.Data)
	}
	// LabelEncoder-2: float keys (NaN matches NaN) to strings.
	nan := float32(math.NaN())
	n := node("LabelEncoder", 2, 1, opstest.AttrFloats("keys_floats", 1, 2, nan), opstest.AttrStrings("values_strings", "one", "two", "nan"), opstest.AttrString("default_string", "none"))
	if y := run(t, n, tensor.From([]int{4}, []float32{2, nan, 3, 1}))[0]; strings.Join(y.Data.([]string), ",") != "two,nan,none,one" {
		t.Errorf("LabelEncoder-2: %v", y.Data)
	}
	// LabelEncoder-4: tensor keys and values; the default is -1 for
	// integer values when default_tensor is absent; a repeated key takes
	// its last value.
	n = node("LabelEncoder", 4, 1, opstest.AttrTensor("keys_tensor", tensor.From([]int{3}, []int32{5, 6, 5})), opstest.AttrTensor("values_tensor", tensor.From([]int{3}, []float64{0.5, 0.25, 0.75})))
	y = run(t, n, tensor.From([]int{3}, []int32{6, 5, 7}))[0]
	if !slices.Equal(y.Data.([]float64), []float64{0.25, 0.75, 0}) || !math.Signbit(y.Data.([]float64)[2]) {
		t.Errorf("LabelEncoder-4: %v (want the default −0.0 last)", y.Data)
	}
	if err := runErr(t, n, tensor.From([]int{1}, []int64{6})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("INT64 input to INT32 keys: %v", err)
	}
	boolValues := &tensor.Tensor{DType: tensor.Bool, Shape: []int{1}, Data: []bool{true}}
	if err := compileErr(node("LabelEncoder", 4, 1, opstest.AttrStrings("keys_strings", "a"), opstest.AttrTensor("values_tensor", boolValues),
		opstest.AttrTensor("default_tensor", boolValues)), 1); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("BOOL values: %v, want unsupported", err)
	}
	if err := compileErr(node("LabelEncoder", 2, 1, opstest.AttrStrings("keys_strings", "a", "b"), opstest.AttrInts("values_int64s", 1)), 1); err == nil {
		t.Error("2 keys for 1 value compiled")
	}
	if err := compileErr(node("LabelEncoder", 2, 1, opstest.AttrTensor("keys_tensor", tensor.From([]int{1}, []string{"a"})), opstest.AttrInts("values_int64s", 1)), 1); err == nil {
		t.Error("a tensor attribute at opset 2 compiled")
	}
}
