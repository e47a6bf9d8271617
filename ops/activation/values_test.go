package activation

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestValues checks the activations against their ONNX definitions, and
// that the float64 forms stay finite where a literal formula overflows.
func TestValues(t *testing.T) {
	xs := []float64{-3, -1, -0.25, 0, 0.25, 1, 3, 200, -200}
	x := tensor.From([]int{len(xs)}, xs)
	sp := func(v float64) float64 { return math.Log(1 + math.Exp(v)) }
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		def   func(float64) float64
	}{
		{"Relu", 14, nil, func(v float64) float64 { return math.Max(v, 0) }},
		{"LeakyRelu", 16, []*onnxpb.Attribute{fattr("alpha", 0.5)}, func(v float64) float64 {
			if v < 0 {
				return 0.5 * v
			}
			return v
		}},
		{"Sigmoid", 13, nil, func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		{"Tanh", 13, nil, math.Tanh},
		{"Elu", 22, []*onnxpb.Attribute{fattr("alpha", 2)}, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return 2 * (math.Exp(v) - 1)
		}},
		{"Selu", 22, nil, func(v float64) float64 {
			a, g := 1.67326319217681884765625, 1.05070102214813232421875
			if v > 0 {
				return g * v
			}
			return g * (a*math.Exp(v) - a)
		}},
		{"Celu", 12, []*onnxpb.Attribute{fattr("alpha", 0.5)}, func(v float64) float64 {
			return math.Max(0, v) + math.Min(0, 0.5*(math.Exp(v/0.5)-1))
		}},
		{"Softplus", 22, nil, func(v float64) float64 {
			if v > 30 {
				return v // log(1+e^v) overflows in the literal formula
			}
			return sp(v)
		}},
		{"Softsign", 22, nil, func(v float64) float64 { return v / (1 + math.Abs(v)) }},
		{"ThresholdedRelu", 22, []*onnxpb.Attribute{fattr("alpha", 0.25)}, func(v float64) float64 {
			if v > 0.25 {
				return v
			}
			return 0
		}},
		{"Mish", 22, nil, func(v float64) float64 {
			if v > 30 {
				return v
			}
			return v * math.Tanh(sp(v))
		}},
		{"Shrink", 9, []*onnxpb.Attribute{fattr("lambd", 1), fattr("bias", 0.5)}, func(v float64) float64 {
			switch {
			case v < -1:
				return v + 0.5
			case v > 1:
				return v - 0.5
			}
			return 0
		}},
		{"HardSigmoid", 22, nil, func(v float64) float64 { return math.Max(0, math.Min(1, float64(float32(0.2))*v+0.5)) }},
		{"HardSwish", 22, nil, func(v float64) float64 { return v * math.Max(0, math.Min(1, v/6+0.5)) }},
		{"Swish", 24, nil, func(v float64) float64 { return v / (1 + math.Exp(-v)) }},
		{"Gelu", 20, nil, func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }},
		{"Gelu", 20, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}}, func(v float64) float64 {
			return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}},
		{"Clip", 6, []*onnxpb.Attribute{fattr("min", -1), fattr("max", 2)}, func(v float64) float64 { return math.Min(math.Max(v, -1), 2) }},
	} {
		out, err := run(t, c.op, c.opset, c.attrs, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float64) {
			want := c.def(xs[i])
			if math.IsInf(got, 0) || math.IsNaN(got) || math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Errorf("%s(%v) = %v, want %v", c.op, xs[i], got, want)
			}
		}
	}
	// Shrink on integers computes in float64 and converts back.
	out, err := run(t, "Shrink", 9, []*onnxpb.Attribute{fattr("lambd", 1.5), fattr("bias", 1.5)}, tensor.From([]int{5}, []int8{-4, -2, 1, 2, 4}))
	if err != nil || !slices.Equal(out[0].Data.([]int8), []int8{-2, 0, 0, 0, 2}) {
		t.Errorf("int8 Shrink = %v, %v", out, err)
	}
	out, err = run(t, "Shrink", 9, nil, tensor.From([]int{3}, []uint64{0, 1, 1 << 40}))
	if err != nil || !slices.Equal(out[0].Data.([]uint64), []uint64{0, 1, 1 << 40}) {
		t.Errorf("uint64 Shrink = %v, %v", out, err)
	}
	if _, err := run(t, "Shrink", 9, nil, tensor.From([]int{1}, []bool{true})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("bool Shrink: %v", err)
	}
	// Celu with alpha 0 divides by zero: a malformed model.
	if _, err := run(t, "Celu", 12, []*onnxpb.Attribute{fattr("alpha", 0)}, x); err == nil {
		t.Error("Celu alpha=0 compiled")
	}
	if _, err := run(t, "Gelu", 20, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("erf")}}, x); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("Gelu approximate=erf: %v", err)
	}
}

// TestTypes runs the activations on every type their specs allow beyond
// float32 and float64, and refuses the others.
func TestTypes(t *testing.T) {
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{-2, 0.5, 3}))
	bf := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{-2, 0.5, 3}))
	for _, op := range []string{"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus", "Softsign", "Mish", "Gelu", "Swish", "ThresholdedRelu", "Shrink"} {
		opset := int64(22)
		switch op {
		case "Gelu":
			opset = 20
		case "Swish":
			opset = 24
		case "Shrink":
			opset = 9
		}
		for _, x := range []*tensor.Tensor{h, bf} {
			out, err := run(t, op, opset, nil, x)
			if err != nil {
				t.Fatalf("%s on %v: %v", op, x.DType, err)
			}
			// The float64 value rounded once.
			ref, err := run(t, op, opset, nil, tensor.From([]int{3}, x.Float64s()))
			if err != nil {
				t.Fatal(err)
			}
			want := ops.FromFloat64s(x.DType, x.Shape, ref[0].Data.([]float64))
			if out[0].DType != x.DType || !slices.Equal(out[0].Float64s(), want.Float64s()) {
				t.Errorf("%s on %v = %v, want %v", op, x.DType, out[0].Float64s(), want.Float64s())
			}
		}
	}
	ints := tensor.From([]int{4}, []int64{-5, 0, 3, math.MinInt64})
	out, err := run(t, "Relu", 14, nil, ints)
	if err != nil || !slices.Equal(out[0].Data.([]int64), []int64{0, 0, 3, 0}) {
		t.Errorf("int64 Relu = %v, %v", out, err)
	}
	for _, op := range []string{"Sigmoid", "Gelu", "HardSwish", "Elu", "LeakyRelu"} {
		if _, err := run(t, op, 22, nil, ints); !errors.Is(err, ops.ErrInput) {
			t.Errorf("int64 %s: %v", op, err)
		}
	}
	for _, x := range []*tensor.Tensor{tensor.From([]int{1}, []string{"a"}), tensor.From([]int{1}, []uint8{1})} {
		if _, err := run(t, "Relu", 14, nil, x); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%v Relu: %v", x.DType, err)
		}
	}
}
