package activation

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// run compiles op at opset with attrs (one output) and runs it on in.
func run(t testing.TB, op string, opset int64, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs}, in...)
}

func fattr(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

// TestDescriptors pins each operator's opset ranges and that it folds.
func TestDescriptors(t *testing.T) {
	ranges := map[string][][2]int64{
		"Relu": {{1, 0}}, "LeakyRelu": {{1, 0}}, "Sigmoid": {{1, 0}}, "Tanh": {{1, 0}}, "HardSigmoid": {{1, 0}},
		"HardSwish": {{14, 0}}, "Elu": {{1, 0}}, "Selu": {{1, 0}}, "Celu": {{12, 0}}, "Softplus": {{1, 0}},
		"Softsign": {{1, 0}}, "ThresholdedRelu": {{10, 0}}, "Mish": {{18, 0}}, "Shrink": {{9, 0}},
		"Gelu": {{20, 0}}, "Swish": {{24, 0}}, "PRelu": {{7, 0}}, "Clip": {{1, 10}, {11, 0}},
		"Dropout": {{7, 9}, {10, 11}, {12, 0}},
	}
	for op, want := range ranges {
		var got [][2]int64
		for _, d := range ops.Descriptors("", op) {
			if !d.Fold || d.Refused {
				t.Errorf("%v: Fold %v, Refused %v", d, d.Fold, d.Refused)
			}
			got = append(got, [2]int64{d.Since, d.Until})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: opset ranges %v, want %v", op, got, want)
		}
	}
}

// TestAttrs checks the attribute defaults against the ONNX spec and that
// an attribute an operator does not name is refused at load.
func TestAttrs(t *testing.T) {
	for _, c := range []struct {
		op    string
		opset int64
		want  any
	}{
		{"LeakyRelu", 16, &LeakyReluAttrs{Alpha: 0.01}},
		{"HardSigmoid", 22, &HardSigmoidAttrs{Alpha: 0.2, Beta: 0.5}},
		{"Elu", 22, &EluAttrs{Alpha: 1}},
		{"Celu", 12, &EluAttrs{Alpha: 1}},
		{"Selu", 22, &SeluAttrs{Alpha: 1.67326319217681884765625, Gamma: 1.05070102214813232421875}},
		{"ThresholdedRelu", 22, &ThresholdedReluAttrs{Alpha: 1}},
		{"Shrink", 9, &ShrinkAttrs{Lambd: 0.5, Bias: 0}},
		{"Swish", 24, &SwishAttrs{Alpha: 1}},
		{"Gelu", 20, &GeluAttrs{Approximate: "none"}},
		{"Clip", 6, &ClipAttrs{Min: -math.MaxFloat32, Max: math.MaxFloat32}},
		{"Dropout", 7, &DropoutAttrs{Ratio: 0.5}},
		{"Dropout", 13, &Dropout12Attrs{}},
		{"Clip", 13, &ops.NoAttrs{}},
	} {
		_, params, err := opstest.Compile(opstest.Node{Op: c.op, Opset: c.opset}, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		if !reflect.DeepEqual(params, c.want) {
			t.Errorf("%s at opset %d parsed %#v, want %#v", c.op, c.opset, params, c.want)
		}
	}
	bad := []*onnxpb.Attribute{fattr("beta", 1)}
	if _, _, err := opstest.Compile(opstest.Node{Op: "LeakyRelu", Opset: 16, Attrs: bad}, 1); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("LeakyRelu with beta: %v", err)
	}
	if _, _, err := opstest.Compile(opstest.Node{Op: "Relu", Opset: 14}, 2); err == nil {
		t.Error("Relu of two inputs compiled")
	}
}

// actInputs are the values the activation tests run on: a sweep of
// ordinary values, both tails, and the special values.
func actInputs() []float32 {
	var xs []float32
	for v := float32(-12); v <= 12; v += 0.0137 {
		xs = append(xs, v)
	}
	return append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-42, 30, -30, 100, -100, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
}

// ulps is |got - want| in float32 ulps at want (0 when both are the same
// special value).
func ulps(got float32, want float64) float64 {
	w := float32(want)
	switch {
	case got == w, got != got && want != want:
		return 0
	case math.IsInf(float64(w), 0) || math.IsInf(float64(got), 0) || got != got || want != want:
		return math.Inf(1)
	}
	a := float32(math.Abs(float64(w)))
	ulp := float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
	return math.Abs(float64(got)-want) / ulp
}

func randF32(r *rand.Rand, shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 4)
	}
	return tensor.From(shape, d)
}

// f64s converts float32 values to float64.
func f64s(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(x)
	}
	return r
}
