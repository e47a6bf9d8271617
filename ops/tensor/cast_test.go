package tensor

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func castAttr(to onnxpb.DataType) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{{Name: "to", Type: onnxpb.AttrInt, I: int64(to)}}
}

// TestCastToString checks the formatting of numbers as numpy's str (and
// Python's repr) gives them, which ONNX's reference Cast uses.
func TestCastToString(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, c := range []struct {
		x    *tensor.Tensor
		want []string
	}{
		{tensor.From([]int{12}, []float64{0.1, 1e16, 1e15, 0.0001, 0.00001, 123.456, negZero, 1.5e300, 5e-324, 2, 12345678901234567890.0, -2.5e-7}),
			[]string{"0.1", "1e+16", "1000000000000000.0", "0.0001", "1e-05", "123.456", "-0.0", "1.5e+300", "5e-324", "2.0", "1.2345678901234567e+19", "-2.5e-07"}},
		{tensor.From([]int{10}, []float32{0.1, 0.47892547, 1.0 / 3, 16777217, math.MaxFloat32, 1e-5, 1e-45, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}),
			[]string{"0.1", "0.47892547", "0.33333334", "16777216.0", "3.4028235e+38", "1e-05", "1e-45", "inf", "-inf", "nan"}},
		{tensor.From([]int{5}, tensor.Float32ToHalf[tensor.F16]([]float32{0.1, 65504, 1.0 / 3, 6e-8, -2})),
			[]string{"0.1", "65500.0", "0.3333", "6e-08", "-2.0"}},
		{tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0.1, 1, 3e38})),
			[]string{"0.1", "1.0", "3e+38"}},
		{tensor.From([]int{3}, []int8{-128, 0, 127}), []string{"-128", "0", "127"}},
		{tensor.From([]int{2}, []uint64{math.MaxUint64, 7}), []string{"18446744073709551615", "7"}},
		{tensor.From([]int{2}, []bool{true, false}), []string{"True", "False"}},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.String)}, c.x)
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data.([]string); out[0].DType != tensor.String || !slices.Equal(got, c.want) {
			t.Errorf("Cast %v to STRING = %q, want %q", c.x.DType, got, c.want)
		}
		// Every formatted float reads back as the same value.
		if c.x.DType.IsFloat() {
			back, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnx.DataTypeToONNX(c.x.DType))}, out[0])
			if err != nil {
				t.Fatal(err)
			}
			if g, w := back[0].Float64s(), c.x.Float64s(); !slices.EqualFunc(g, w, func(a, b float64) bool { return a == b || a != a && b != b }) {
				t.Errorf("%v round trip = %v, want %v", c.x.DType, g, w)
			}
		}
	}
}

// TestCastFromString parses the forms ONNX's Cast names (plain and
// scientific notation, INF, +INF, -INF and NaN in any case) into every
// number type.
func TestCastFromString(t *testing.T) {
	s := tensor.From([]int{9}, []string{"0.47892547", "NaN", "INF", "+INF", "-inf", " 1e-5 ", "1E8", "-0", "3.14"})
	out, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.Float)}, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0.47892547, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-5, 1e8, float32(math.Copysign(0, -1)), 3.14}
	if g := out[0].Data.([]float32); !slices.EqualFunc(g, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }) {
		t.Errorf("STRING to FLOAT = %v, want %v", g, want)
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.Float16)}, s)
	if err != nil || out[0].DType != tensor.Float16 || out[0].Data.([]tensor.F16)[0] != tensor.F16FromFloat64(0.47892547) {
		t.Errorf("STRING to FLOAT16 = %v, %v", out, err)
	}
	ints := tensor.From([]int{7}, []string{"42", "-7", "+3", "100.5", "-2.9", "1e3", "300"})
	for to, want := range map[onnxpb.DataType]string{
		onnxpb.Int64: "[42 -7 3 100 -2 1000 300]",
		onnxpb.Int8:  "[42 -7 3 100 -2 -24 44]",
		onnxpb.Uint8: "[42 249 3 100 254 232 44]",
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(to)}, ints)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmtData(out[0]); got != want {
			t.Errorf("STRING to %v = %s, want %s", to, got, want)
		}
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.Bool)}, tensor.From([]int{5}, []string{"True", "false", "0", "2.5", " TRUE "}))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, false, false, true, true}) {
		t.Errorf("STRING to BOOL = %v, %v", out, err)
	}
	for _, to := range []onnxpb.DataType{onnxpb.Float, onnxpb.Int32, onnxpb.Bool, onnxpb.Uint64, onnxpb.BFloat16} {
		for _, bad := range []string{"Hello World!", "", "1.2.3", "nan?"} {
			if _, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(to)}, tensor.From([]int{1}, []string{bad})); !errors.Is(err, ops.ErrInput) {
				t.Errorf("%q to %v: %v", bad, to, err)
			}
		}
	}
	// STRING to STRING is the identity.
	out, err = opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.String)}, s)
	if err != nil || !slices.Equal(out[0].Data.([]string), s.Data.([]string)) {
		t.Errorf("STRING to STRING = %v, %v", out, err)
	}
}

func fmtData(t *tensor.Tensor) string {
	s := "["
	out := make([]string, t.Len())
	formatInto(out, t.Data)
	for i, v := range out {
		if i > 0 {
			s += " "
		}
		s += v
	}
	return s + "]"
}

// TestCastNumbers checks the numeric rules of ONNX's Cast table.
func TestCastNumbers(t *testing.T) {
	// 1 + 2^-11 + 2^-40 lies just above the midpoint of two FP16 values:
	// rounded once it goes up; through float32 (which drops the 2^-40) it
	// would tie and go to even.
	x := tensor.From([]int{1}, []float64{1 + 0x1p-11 + 0x1p-40})
	out, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.Float16)}, x)
	if err != nil || out[0].Data.([]tensor.F16)[0] != 0x3c01 {
		t.Errorf("DOUBLE to FLOAT16 = %v, %v; want 0x3c01", out, err)
	}
	for _, c := range []struct {
		x    *tensor.Tensor
		to   onnxpb.DataType
		want string
	}{
		{tensor.From([]int{3}, []int16{200, 300, -129}), onnxpb.Int8, "[-56 44 127]"},
		{tensor.From([]int{3}, []float32{2.9, -2.9, 0.5}), onnxpb.Int32, "[2 -2 0]"},
		{tensor.From([]int{4}, []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), 1e-30}), onnxpb.Bool, "[False False True True]"},
		{tensor.From([]int{2}, []bool{true, false}), onnxpb.Double, "[1.0 0.0]"},
		{tensor.From([]int{1}, []uint64{math.MaxUint64}), onnxpb.Float, "[1.8446744e+19]"},
		{tensor.From([]int{2}, []float64{1e300, -1e300}), onnxpb.Float, "[inf -inf]"},
		// 3 + 2^-7 lies halfway between two BF16 values: ties to even.
		{tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{0.1, 3.0078125})), onnxpb.BFloat16, "[0.1 3.0]"},
		{tensor.From([]int{2}, []int64{70000, -3}), onnxpb.Float16, "[inf -3.0]"},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(c.to)}, c.x)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmtData(out[0]); got != c.want {
			t.Errorf("Cast %v to %v = %s, want %s", c.x.DType, c.to, got, c.want)
		}
	}
	// Types the Open Inference Protocol cannot carry are refused at load.
	if _, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21, Attrs: castAttr(onnxpb.DataType(17))}, x); !errors.Is(err, ops.ErrUnsupported) { // FLOAT8E4M3FN
		t.Errorf("Cast to FLOAT8E4M3FN: %v", err)
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 21}, x); err == nil {
		t.Error("Cast without to compiled")
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "Cast", Opset: 25, Attrs: append(castAttr(onnxpb.Float), &onnxpb.Attribute{Name: "round_mode", Type: onnxpb.AttrString, S: []byte("sideways")})}, x); err == nil {
		t.Error("round_mode sideways compiled")
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Cast", Opset: 25, Attrs: append(castAttr(onnxpb.Float), &onnxpb.Attribute{Name: "saturate", Type: onnxpb.AttrInt, I: 0})}, tensor.From([]int{1}, []float64{1e300}))
	if err != nil || !math.IsInf(float64(out[0].Data.([]float32)[0]), 1) {
		t.Errorf("saturate=0 to FLOAT = %v, %v", out, err)
	}
}
