package arith

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestUnaryMath checks the unary functions on every type family against
// their definitions, including the cases numpy pins down: Round halves to
// even, Abs of the most negative integer wraps, Sign of NaN is NaN.
func TestUnaryMath(t *testing.T) {
	vals := []float64{-2.5, -1.5, -0.5, math.Copysign(0, -1), 0, 0.5, 1.5, 2.5, 0.3, -0.7, 3, math.Inf(1), math.Inf(-1), math.NaN()}
	sign := func(v float64) float64 {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return v
	}
	defs := map[string]func(float64) float64{
		"Abs": math.Abs, "Neg": func(v float64) float64 { return -v }, "Sign": sign,
		"Ceil": math.Ceil, "Floor": math.Floor, "Round": math.RoundToEven, "Sqrt": math.Sqrt,
		"Reciprocal": func(v float64) float64 { return 1 / v }, "Log": math.Log, "Exp": math.Exp,
		"Sin": math.Sin, "Cos": math.Cos, "Tan": math.Tan, "Asin": math.Asin, "Acos": math.Acos,
		"Atan": math.Atan, "Sinh": math.Sinh, "Cosh": math.Cosh, "Asinh": math.Asinh,
		"Acosh": math.Acosh, "Atanh": math.Atanh, "Erf": math.Erf,
	}
	if len(defs) != len(unaryNames) {
		t.Fatalf("%d definitions for %d operators", len(defs), len(unaryNames))
	}
	for name, f := range defs {
		x := tensor.From([]int{len(vals)}, vals)
		out, err := run(t, name, 22, nil, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float64) {
			want := f(vals[i])
			if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) && !(got == 0 && want == 0 && name != "Neg") {
				t.Errorf("%s(%v) = %v, want %v", name, vals[i], got, want)
			}
		}
		// float32 agrees with float64 rounded (within the fast kernels'
		// few ulps for Exp and Erf), FP16 exactly.
		x32 := tensor.From([]int{len(vals)}, convert[float32](vals))
		out, err = run(t, name, 22, nil, x32)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float32) {
			want := f(float64(float32(vals[i])))
			if e := ulps(got, want); e > 3 {
				t.Errorf("float32 %s(%v) = %v, want %v (%v ulp)", name, vals[i], got, want, e)
			}
		}
		xh := tensor.From([]int{len(vals)}, tensor.Float32ToHalf[tensor.F16](convert[float32](vals)))
		out, err = run(t, name, 22, nil, xh)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]tensor.F16) {
			want := tensor.F16FromFloat64(f(float64(xh.Data.([]tensor.F16)[i].Float32())))
			if got != want && !(got.Float32() != got.Float32() && want.Float32() != want.Float32()) && !(got.Float32() == 0 && want.Float32() == 0) {
				t.Errorf("FP16 %s(%v) = %v, want %v", name, vals[i], got.Float32(), want.Float32())
			}
		}
	}
	ints := tensor.From([]int{4}, []int32{math.MinInt32, -3, 0, 5})
	for op, want := range map[string][]int32{"Abs": {math.MinInt32, 3, 0, 5}, "Neg": {math.MinInt32, 3, 0, -5}, "Sign": {-1, -1, 0, 1}, "Erf": {-1, 0, 0, 0}} {
		out, err := run(t, op, 13, nil, ints)
		if err != nil || !slices.Equal(out[0].Data.([]int32), want) {
			t.Errorf("int32 %s = %v, %v; want %v", op, out, err, want)
		}
	}
	out, err := run(t, "Abs", 13, nil, tensor.From([]int{2}, []uint16{0, 65535}))
	if err != nil || !slices.Equal(out[0].Data.([]uint16), []uint16{0, 65535}) {
		t.Errorf("uint16 Abs = %v, %v", out, err)
	}
	for _, op := range []string{"Sqrt", "Exp", "Floor", "Sin"} {
		if _, err := run(t, op, 13, nil, ints); !errors.Is(err, ops.ErrInput) {
			t.Errorf("int32 %s: %v", op, err)
		}
	}
	if _, err := run(t, "Neg", 13, nil, tensor.From([]int{1}, []uint8{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("uint8 Neg: %v", err)
	}
	if _, err := run(t, "Abs", 13, nil, tensor.From([]int{1}, []string{"1"})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("string Abs: %v", err)
	}
	// Zero-size and rank-0 tensors keep their shapes.
	for _, shape := range [][]int{{0}, {2, 0, 3}, nil} {
		n, _ := tensor.NumElements(shape)
		out, err := run(t, "Exp", 13, nil, tensor.From(shape, make([]float32, n)))
		if err != nil || !slices.Equal(out[0].Shape, shape) || out[0].Len() != n {
			t.Errorf("Exp of %v = %v, %v", shape, out, err)
		}
	}
}

// TestUnaryFloat32MatchesFloat64 compares the float32 kernels of Exp and
// Erf with their float64 paths on the same inputs: a sample of every
// float32 exponent and the special values.
func TestUnaryFloat32MatchesFloat64(t *testing.T) {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-42, 30, -30, 100, -100, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for v := float32(-12); v <= 12; v += 0.0137 {
		xs = append(xs, v)
	}
	for b := uint64(0); b < 1<<32; b += 65537 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	x32 := tensor.From([]int{len(xs)}, xs)
	x64 := tensor.From([]int{len(xs)}, convert[float64](xs))
	for op, tol := range map[string]float64{"Erf": 3, "Exp": 1.5} {
		o32, err := run(t, op, 13, nil, x32)
		if err != nil {
			t.Fatal(err)
		}
		o64, err := run(t, op, 13, nil, x64)
		if err != nil {
			t.Fatal(err)
		}
		g, w := o32[0].Data.([]float32), o64[0].Data.([]float64)
		for i := range g {
			if e := ulps(g[i], w[i]); e > tol {
				t.Errorf("%s(%v) float32 %v, float64 %v: %.2f ulp", op, xs[i], g[i], w[i], e)
				break
			}
		}
	}
}

// TestMapFloat: every floating-point type computes in float64 and rounds
// once; other types are input errors naming the operator.
func TestMapFloat(t *testing.T) {
	f := func(v float64) float64 { return v/3 + 1e-9 }
	v := []float64{1, -2.5, 1e-3, 7}
	for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16} {
		x := ops.FromFloat64s(dt, []int{2, 2}, v)
		got, err := MapFloat(nil, "F", x, f)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(v))
		for i, w := range x.Float64s() {
			want[i] = f(w)
		}
		if w := ops.FromFloat64s(dt, []int{2, 2}, want); got.DType != dt || !slices.Equal(got.Shape, []int{2, 2}) || !slices.Equal(got.Float64s(), w.Float64s()) {
			t.Errorf("%v: %v, want %v", dt, got.Float64s(), w.Float64s())
		}
	}
	if _, err := MapFloat(nil, "F", tensor.Scalar(int32(1)), f); !errors.Is(err, ops.ErrInput) {
		t.Errorf("INT32: %v", err)
	}
}
