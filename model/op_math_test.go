package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// elemRandShapes returns two shapes that broadcast together: random ranks
// up to 4, dimensions 0 to 4, with 1s (and missing leading dimensions)
// where one side broadcasts.
func elemRandShapes(r *rand.Rand) (a, b []int) {
	rank := r.IntN(5)
	out := make([]int, rank)
	for i := range out {
		out[i] = r.IntN(4) + 1
		if r.IntN(12) == 0 {
			out[i] = 0
		}
	}
	pick := func() []int {
		s := slices.Clone(out[r.IntN(rank+1):])
		for i := range s {
			if r.IntN(3) == 0 {
				s[i] = 1
			}
		}
		return s
	}
	return pick(), pick()
}

// elemNaive computes f over the broadcast of a and b by walking every
// output index: the definition the fast layout must match.
func elemNaive[T, R tensor.Elem](a, b []T, as, bs []int, f func(x, y T) R) ([]int, []R) {
	out, err := broadcastShape(as, bs)
	if err != nil {
		panic(err)
	}
	n, _ := tensor.NumElements(out)
	r := make([]R, n)
	it := tensor.NewIter(out, tensor.BroadcastStrides(as, out), tensor.BroadcastStrides(bs, out))
	for i := 0; it.Next(); i++ {
		r[i] = f(a[it.Off(0)], b[it.Off(1)])
	}
	return out, r
}

func elemRandF32(r *rand.Rand, shape []int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 4)
	}
	return tensor.From(shape, d)
}

func elemRandI32(r *rand.Rand, shape []int, nonzero bool) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(r.IntN(41) - 20)
		if nonzero && d[i] == 0 {
			d[i] = 7
		}
	}
	return tensor.From(shape, d)
}

// TestElemBinaryMatchesIndexWalk runs Add, Sub, Mul, Div, Min and Max over
// random broadcasting shapes (zero-size, scalar, rank 0 included) and
// checks every element against the index-walking definition.
func TestElemBinaryMatchesIndexWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f32 := map[elemBinaryOp]func(x, y float32) float32{
		elemAdd: func(x, y float32) float32 { return x + y }, elemSub: func(x, y float32) float32 { return x - y },
		elemMul: func(x, y float32) float32 { return x * y }, elemDiv: func(x, y float32) float32 { return x / y },
		elemMin: func(x, y float32) float32 { return min(x, y) }, elemMax: func(x, y float32) float32 { return max(x, y) },
	}
	i32 := map[elemBinaryOp]func(x, y int32) int32{
		elemAdd: func(x, y int32) int32 { return x + y }, elemSub: func(x, y int32) int32 { return x - y },
		elemMul: func(x, y int32) int32 { return x * y }, elemDiv: func(x, y int32) int32 { return x / y },
		elemMin: func(x, y int32) int32 { return min(x, y) }, elemMax: func(x, y int32) int32 { return max(x, y) },
	}
	for trial := 0; trial < 400; trial++ {
		as, bs := elemRandShapes(r)
		if trial%2 == 1 {
			as, bs = bs, as
		}
		for op := elemAdd; op <= elemMax; op++ {
			a, b := elemRandF32(r, as), elemRandF32(r, bs)
			got, err := elemBinary("op", op, a, b)
			if err != nil {
				t.Fatalf("%v %v: %v", as, bs, err)
			}
			shape, want := elemNaive(a.Data.([]float32), b.Data.([]float32), as, bs, f32[op])
			if !equalShape(got.Shape, shape) || !slices.Equal(got.Data.([]float32), want) {
				t.Fatalf("op %d on %v and %v: got %v %v, want %v %v", op, as, bs, got.Shape, got.Data, shape, want)
			}
			ai, bi := elemRandI32(r, as, false), elemRandI32(r, bs, true)
			goti, err := elemBinary("op", op, ai, bi)
			if err != nil {
				t.Fatal(err)
			}
			_, wanti := elemNaive(ai.Data.([]int32), bi.Data.([]int32), as, bs, i32[op])
			if !slices.Equal(goti.Data.([]int32), wanti) {
				t.Fatalf("int32 op %d on %v and %v: got %v, want %v", op, as, bs, goti.Data, wanti)
			}
		}
	}
}

func TestElemBinaryErrors(t *testing.T) {
	f := tensor.From([]int{2}, []float32{1, 2})
	for _, c := range []struct {
		name string
		a, b *tensor.Tensor
	}{
		{"types", f, tensor.From([]int{2}, []int32{1, 2})},
		{"shapes", f, tensor.From([]int{3}, []float32{1, 2, 3})},
		{"strings", tensor.From([]int{1}, []string{"a"}), tensor.From([]int{1}, []string{"b"})},
		{"bool", tensor.From([]int{1}, []bool{true}), tensor.From([]int{1}, []bool{true})},
		{"integer division by zero", tensor.From([]int{2}, []int64{1, 2}), tensor.From([]int{2}, []int64{1, 0})},
		// 2^16 × 2^16 outputs exceed tensor.MaxElements: refused before allocating
		{"too large", &tensor.Tensor{DType: tensor.Float32, Shape: []int{1 << 16, 1}, Data: make([]float32, 1<<16)},
			&tensor.Tensor{DType: tensor.Float32, Shape: []int{1, 1 << 16}, Data: make([]float32, 1<<16)}},
	} {
		_, err := runOp(t, "Div", 14, 1, nil, c.a, c.b)
		if !errors.Is(err, ErrInput) {
			t.Errorf("%s: error %v, want an input error", c.name, err)
		}
	}
}

// TestIntegerArithmeticWraps checks the integer edge cases numpy and ONNX
// Runtime share: wrapping, truncating division, the most negative value.
func TestIntegerArithmeticWraps(t *testing.T) {
	a := tensor.From([]int{4}, []int8{127, -128, -7, 7})
	b := tensor.From([]int{4}, []int8{1, -1, 2, -2})
	for op, want := range map[string][]int8{
		"Add": {-128, 127, -5, 5},
		"Sub": {126, -127, -9, 9},
		"Mul": {127, -128, -14, -14},
		"Div": {127, -128, -3, -3},
	} {
		out, err := runOp(t, op, 14, 1, nil, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data.([]int8); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", op, got, want)
		}
	}
	u := tensor.From([]int{2}, []uint8{3, 250})
	out, err := runOp(t, "Sub", 14, 1, nil, u, tensor.From([]int{2}, []uint8{5, 10}))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{254, 240}) {
		t.Errorf("uint8 Sub = %v, %v", out, err)
	}
}

// TestHalfArithmeticRoundsOnce checks FP16 and BF16 arithmetic against
// the exact result rounded once: float32 carries enough bits for +, -, ·
// and / on half operands that its one extra rounding never shows.
func TestHalfArithmeticRoundsOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 4000
	ah, bh := make([]tensor.F16, n), make([]tensor.F16, n)
	ab, bb := make([]tensor.BF16, n), make([]tensor.BF16, n)
	for i := range ah {
		ah[i], bh[i] = tensor.F16(r.Uint32()&0x7bff|r.Uint32()&0x8000), tensor.F16(r.Uint32()&0x7bff|r.Uint32()&0x8000)
		ab[i], bb[i] = tensor.BF16(r.Uint32()&0x7f7f|r.Uint32()&0x8000), tensor.BF16(r.Uint32()&0x7f7f|r.Uint32()&0x8000)
	}
	exact := map[string]func(x, y float64) float64{
		"Add": func(x, y float64) float64 { return x + y }, "Sub": func(x, y float64) float64 { return x - y },
		"Mul": func(x, y float64) float64 { return x * y }, "Div": func(x, y float64) float64 { return x / y },
	}
	for op, f := range exact {
		out, err := runOp(t, op, 14, 1, nil, tensor.From([]int{n}, ah), tensor.From([]int{n}, bh))
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]tensor.F16) {
			want := tensor.F16FromFloat64(f(float64(ah[i].Float32()), float64(bh[i].Float32())))
			if got != want && !(got.Float32() != got.Float32() && want.Float32() != want.Float32()) {
				t.Fatalf("FP16 %s(%v, %v) = %v, want %v", op, ah[i].Float32(), bh[i].Float32(), got.Float32(), want.Float32())
			}
		}
		out, err = runOp(t, op, 14, 1, nil, tensor.From([]int{n}, ab), tensor.From([]int{n}, bb))
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]tensor.BF16) {
			// BF16 shares float32's exponent range: the float64 result can
			// be beyond float32's, where rounding through float32 and
			// directly agree anyway (both overflow or underflow alike).
			want := tensor.BF16FromFloat64(f(float64(ab[i].Float32()), float64(bb[i].Float32())))
			if got != want && !(got.Float32() != got.Float32() && want.Float32() != want.Float32()) {
				t.Fatalf("BF16 %s(%v, %v) = %v, want %v", op, ab[i].Float32(), bb[i].Float32(), got.Float32(), want.Float32())
			}
		}
	}
}

func TestVariadic(t *testing.T) {
	a := tensor.From([]int{2, 1}, []float32{1, 2})
	b := tensor.From([]int{3}, []float32{10, 20, 30})
	c := tensor.Scalar(float32(100))
	for op, want := range map[string][]float32{
		"Sum":  {111, 121, 131, 112, 122, 132},
		"Mean": {37, 121.0 / 3, 131.0 / 3, 112.0 / 3, 122.0 / 3, 44},
		"Min":  {1, 1, 1, 2, 2, 2},
		"Max":  {100, 100, 100, 100, 100, 100},
	} {
		out, err := runOp(t, op, 13, 1, nil, a, b, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out[0].Shape, []int{2, 3}) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Errorf("%s = %v %v, want [2 3] %v", op, out[0].Shape, out[0].Data, want)
		}
		// One input is itself.
		out, err = runOp(t, op, 13, 1, nil, b)
		if err != nil || !slices.Equal(out[0].Data.([]float32), b.Data.([]float32)) {
			t.Errorf("%s of one input = %v, %v", op, out, err)
		}
		// Before opset 8 operands must share one shape.
		if _, err := runOp(t, op, 7, 1, nil, a, b); !errors.Is(err, ErrInput) {
			t.Errorf("%s at opset 7 broadcast: %v", op, err)
		}
		if _, err := runOp(t, op, 7, 1, nil, b, b); err != nil {
			t.Errorf("%s at opset 7: %v", op, err)
		}
	}
	// NaN wins Min and Max, as numpy's minimum and maximum.
	nan := float32(math.NaN())
	out, err := runOp(t, "Max", 13, 1, nil, tensor.From([]int{2}, []float32{nan, 1}), tensor.From([]int{2}, []float32{1, nan}))
	if err != nil || !(out[0].Data.([]float32)[0] != out[0].Data.([]float32)[0]) || !(out[0].Data.([]float32)[1] != out[0].Data.([]float32)[1]) {
		t.Errorf("Max with NaN = %v, %v", out, err)
	}
	// Integer Min and Max; Sum and Mean take floats only.
	out, err = runOp(t, "Max", 13, 1, nil, tensor.From([]int{2}, []uint64{1, 1 << 63}), tensor.From([]int{1}, []uint64{5}))
	if err != nil || !slices.Equal(out[0].Data.([]uint64), []uint64{5, 1 << 63}) {
		t.Errorf("uint64 Max = %v, %v", out, err)
	}
	if _, err := runOp(t, "Sum", 13, 1, nil, tensor.From([]int{1}, []int32{1}), tensor.From([]int{1}, []int32{1})); !errors.Is(err, ErrInput) {
		t.Errorf("int32 Sum: %v", err)
	}
	// FP16 Mean rounds once from the float32 mean.
	h := func(v ...float32) *tensor.Tensor {
		return tensor.From([]int{len(v)}, tensor.Float32ToHalf[tensor.F16](v))
	}
	out, err = runOp(t, "Mean", 13, 1, nil, h(1, 2), h(2, 3), h(4, 5))
	if err != nil || out[0].DType != tensor.Float16 || !slices.Equal(tensor.HalfToFloat32(out[0].Data.([]tensor.F16)), []float32{tensor.F16From(float32(7) / 3).Float32(), tensor.F16From(float32(10) / 3).Float32()}) {
		t.Errorf("FP16 Mean = %v, %v", out, err)
	}
}

func TestPow(t *testing.T) {
	x := tensor.From([]int{6}, []float32{float32(math.Copysign(0, -1)), 0, 4, -4, float32(math.Inf(-1)), float32(math.NaN())})
	for _, e := range []float32{2, 0.5, 3, -1} {
		out, err := runOp(t, "Pow", 15, 1, nil, x, tensor.Scalar(e))
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float32) {
			want := float32(math.Pow(float64(x.Data.([]float32)[i]), float64(e)))
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Errorf("Pow(%v, %v) = %v, want %v", x.Data.([]float32)[i], e, got, want)
			}
		}
	}
	for _, c := range []struct {
		x, y *tensor.Tensor
		want any
	}{
		{tensor.From([]int{3}, []int64{3, -2, 2}), tensor.From([]int{3}, []int64{40, 3, 63}), []int64{int64(intPowRef(3, 40)), -8, math.MinInt64}},
		{tensor.From([]int{4}, []int32{2, 1, -1, -1}), tensor.From([]int{4}, []int32{-1, -5, -2, -3}), []int32{0, 1, 1, -1}},
		{tensor.From([]int{2}, []int32{2, 3}), tensor.From([]int{2}, []float32{0.5, 2.5}), []int32{1, 15}},
		{tensor.From([]int{2}, []float32{2, 3}), tensor.From([]int{2}, []int64{3, -1}), []float32{8, float32(1.0 / 3)}},
		{tensor.From([]int{2}, []float32{2, 3}), tensor.From([]int{2}, []uint64{3, 1}), []float32{8, 3}},
		{tensor.From([]int{2}, []uint8{2, 3}), tensor.From([]int{1}, []uint8{8}), []uint8{0, 161}},
		{tensor.From([]int{2, 1}, []float64{2, 3}), tensor.From([]int{2}, []float64{2, 0.5}), []float64{4, math.Sqrt2, 9, math.Sqrt(3)}},
	} {
		out, err := runOp(t, "Pow", 15, 1, nil, c.x, c.y)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(out[0].Data) != fmt.Sprint(c.want) || out[0].DType != c.x.DType {
			t.Errorf("Pow(%v, %v) = %v %v, want %v", c.x.Data, c.y.Data, out[0].DType, out[0].Data, c.want)
		}
	}
	if _, err := runOp(t, "Pow", 15, 1, nil, x, tensor.From([]int{1}, []string{"2"})); !errors.Is(err, ErrInput) {
		t.Errorf("string exponent: %v", err)
	}
}

func intPowRef(b, e int64) int64 {
	r := int64(1)
	for range e {
		r *= b
	}
	return r
}

func TestMod(t *testing.T) {
	a := []int64{-4, 7, 5, -5, 0}
	b := []int64{3, -3, 3, -3, 2}
	for fmod, want := range map[int64][]int64{0: {2, -2, 2, -2, 0}, 1: {-1, 1, 2, -2, 0}} {
		attr := []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: fmod}}
		out, err := runOp(t, "Mod", 13, 1, attr, tensor.From([]int{5}, a), tensor.From([]int{5}, b))
		if err != nil || !slices.Equal(out[0].Data.([]int64), want) {
			t.Errorf("int64 Mod fmod=%d = %v, %v; want %v", fmod, out, err, want)
		}
		fa, fb := convert[float64](a), convert[float64](b)
		fa[0], fb[0] = -4.5, 2
		out, err = runOp(t, "Mod", 13, 1, attr, tensor.From([]int{5}, fa), tensor.From([]int{5}, fb))
		wantF := convert[float64](want)
		wantF[0] = 1.5
		if fmod == 1 {
			wantF[0] = -0.5
		}
		if err != nil || !slices.Equal(out[0].Data.([]float64), wantF) {
			t.Errorf("float64 Mod fmod=%d = %v, %v; want %v", fmod, out, err, wantF)
		}
	}
	out, err := runOp(t, "Mod", 13, 1, nil, tensor.From([]int{2}, []uint8{200, 7}), tensor.From([]int{1}, []uint8{6}))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{2, 1}) {
		t.Errorf("uint8 Mod = %v, %v", out, err)
	}
	if _, err := runOp(t, "Mod", 13, 1, nil, tensor.From([]int{1}, []int32{5}), tensor.From([]int{1}, []int32{0})); !errors.Is(err, ErrInput) {
		t.Errorf("Mod by zero: %v", err)
	}
	// A float divisor of zero is NaN, not an error.
	out, err = runOp(t, "Mod", 13, 1, []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: 1}}, tensor.Scalar(float32(1)), tensor.Scalar(float32(0)))
	if err != nil || out[0].Data.([]float32)[0] == out[0].Data.([]float32)[0] {
		t.Errorf("float Mod by zero = %v, %v", out, err)
	}
}

func TestBitOperators(t *testing.T) {
	left := []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("LEFT")}}
	right := []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("RIGHT")}}
	x := tensor.From([]int{4}, []uint8{1, 3, 255, 16})
	s := tensor.From([]int{4}, []uint8{1, 7, 8, 200})
	out, err := runOp(t, "BitShift", 11, 1, left, x, s)
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{2, 128, 0, 0}) {
		t.Errorf("LEFT = %v, %v", out, err)
	}
	out, err = runOp(t, "BitShift", 11, 1, right, x, tensor.Scalar(uint8(1)))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{0, 1, 127, 8}) {
		t.Errorf("RIGHT = %v, %v", out, err)
	}
	if _, err := runOp(t, "BitShift", 11, 1, []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("UP")}}, x, s); err == nil {
		t.Error("direction UP compiled")
	}
	if _, err := runOp(t, "BitShift", 11, 1, left, tensor.From([]int{1}, []int8{1}), tensor.From([]int{1}, []int8{1})); !errors.Is(err, ErrInput) {
		t.Errorf("signed BitShift: %v", err)
	}
	a := tensor.From([]int{2, 2}, []int16{0x0f0f, -1, 5, 0})
	b := tensor.From([]int{2}, []int16{0x00ff, 3})
	for op, want := range map[string][]int16{"BitwiseAnd": {0x000f, 3, 5, 0}, "BitwiseOr": {0x0fff, -1, 0xff, 3}, "BitwiseXor": {0x0ff0, -4, 0xfa, 3}} {
		out, err := runOp(t, op, 18, 1, nil, a, b)
		if err != nil || !slices.Equal(out[0].Data.([]int16), want) {
			t.Errorf("%s = %v, %v; want %v", op, out, err, want)
		}
	}
	out, err = runOp(t, "BitwiseNot", 18, 1, nil, tensor.From([]int{2}, []int8{0, -128}))
	if err != nil || !slices.Equal(out[0].Data.([]int8), []int8{-1, 127}) {
		t.Errorf("BitwiseNot = %v, %v", out, err)
	}
	if _, err := runOp(t, "BitwiseNot", 18, 1, nil, tensor.From([]int{1}, []float32{1})); !errors.Is(err, ErrInput) {
		t.Errorf("float BitwiseNot: %v", err)
	}
}

// TestUnaryMath checks the unary functions on every type family against
// their definitions, including the cases numpy pins down: Round halves to
// even, Abs of the most negative integer wraps, Sign of NaN is NaN.
func TestUnaryMath(t *testing.T) {
	vals := []float64{-2.5, -1.5, -0.5, math.Copysign(0, -1), 0, 0.5, 1.5, 2.5, 0.3, -0.7, 3, math.Inf(1), math.Inf(-1), math.NaN()}
	defs := map[elemUnaryOp]func(float64) float64{
		elemAbs: math.Abs, elemNeg: func(v float64) float64 { return -v }, elemSign: elemSignFloat,
		elemCeil: math.Ceil, elemFloor: math.Floor, elemRound: math.RoundToEven, elemSqrt: math.Sqrt,
		elemReciprocal: func(v float64) float64 { return 1 / v }, elemLog: math.Log, elemExp: math.Exp,
		elemSin: math.Sin, elemCos: math.Cos, elemTan: math.Tan, elemAsin: math.Asin, elemAcos: math.Acos,
		elemAtan: math.Atan, elemSinh: math.Sinh, elemCosh: math.Cosh, elemAsinh: math.Asinh,
		elemAcosh: math.Acosh, elemAtanh: math.Atanh, elemErf: math.Erf,
	}
	for op, f := range defs {
		name := elemUnaryNames[op]
		x := tensor.From([]int{len(vals)}, vals)
		out, err := runOp(t, name, 22, 1, nil, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float64) {
			want := f(vals[i])
			if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) && !(got == 0 && want == 0 && op != elemNeg) {
				t.Errorf("%s(%v) = %v, want %v", name, vals[i], got, want)
			}
		}
		// float32 agrees with float64 rounded (within the fast kernels'
		// few ulps for Exp and Erf), FP16 exactly.
		x32 := tensor.From([]int{len(vals)}, convert[float32](vals))
		out, err = runOp(t, name, 22, 1, nil, x32)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]float32) {
			want := f(float64(float32(vals[i])))
			if e := elemULPs(got, want); e > 3 {
				t.Errorf("float32 %s(%v) = %v, want %v (%v ulp)", name, vals[i], got, want, e)
			}
		}
		xh := tensor.From([]int{len(vals)}, tensor.Float32ToHalf[tensor.F16](convert[float32](vals)))
		out, err = runOp(t, name, 22, 1, nil, xh)
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
		out, err := runOp(t, op, 13, 1, nil, ints)
		if err != nil || !slices.Equal(out[0].Data.([]int32), want) {
			t.Errorf("int32 %s = %v, %v; want %v", op, out, err, want)
		}
	}
	out, err := runOp(t, "Abs", 13, 1, nil, tensor.From([]int{2}, []uint16{0, 65535}))
	if err != nil || !slices.Equal(out[0].Data.([]uint16), []uint16{0, 65535}) {
		t.Errorf("uint16 Abs = %v, %v", out, err)
	}
	for _, op := range []string{"Sqrt", "Exp", "Floor", "Sin"} {
		if _, err := runOp(t, op, 13, 1, nil, ints); !errors.Is(err, ErrInput) {
			t.Errorf("int32 %s: %v", op, err)
		}
	}
	if _, err := runOp(t, "Neg", 13, 1, nil, tensor.From([]int{1}, []uint8{1})); !errors.Is(err, ErrInput) {
		t.Errorf("uint8 Neg: %v", err)
	}
	// Zero-size and rank-0 tensors keep their shapes.
	for _, shape := range [][]int{{0}, {2, 0, 3}, nil} {
		n, _ := tensor.NumElements(shape)
		out, err := runOp(t, "Exp", 13, 1, nil, tensor.From(shape, make([]float32, n)))
		if err != nil || !slices.Equal(out[0].Shape, shape) || out[0].Len() != n {
			t.Errorf("Exp of %v = %v, %v", shape, out, err)
		}
	}
}

// elemULPs is |got - want| in float32 ulps at want (0 when both are the
// same special value).
func elemULPs(got float32, want float64) float64 {
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

// TestFloat32Approximations sweeps a sample of every float32 magnitude
// (and the edge cases) through the float32 exp, tanh, sigmoid, erf and
// erfc against math's float64 functions.
func TestFloat32Approximations(t *testing.T) {
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-38, 0.5, -0.5, 0.625, -0.625,
		88.72283, 88.72284, -87.33655, -103.97, -103.973, 9.1, -9.1, 10.06, -10.06, 3.92, 1.5, 3, 5.5,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32}
	xs := edges
	for b := uint64(0); b < 1<<32; b += 65537 { // 65,536 values spread over every exponent
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for _, c := range []struct {
		name string
		f    func(float32) float32
		ref  func(float64) float64
		ulps float64
	}{
		{"exp", elemExp32, math.Exp, 1.5},
		{"tanh", elemTanh32, math.Tanh, 1.5},
		{"sigmoid", elemSigmoid32, sig, 3},
		{"erf", elemErf32, math.Erf, 3},
		{"erfc", elemErfc32, math.Erfc, 5},
	} {
		worst, at := 0.0, float32(0)
		for _, x := range xs {
			if e := elemULPs(c.f(x), c.ref(float64(x))); e > worst {
				worst, at = e, x
			}
		}
		if worst > c.ulps {
			t.Errorf("%s: %.2f ulp at %v (got %v, want %v)", c.name, worst, at, c.f(at), c.ref(float64(at)))
		}
	}
}

// benchPair runs fast and base alternately (order swapped every
// iteration) and reports each one's least time and their ratio. On a
// machine shared with other work, interference only ever adds time, so
// the least of many runs is the steadiest estimate of each; wall-clock
// ns/op of separate benchmarks moves with the load between them.
func benchPair(b *testing.B, fast, base func()) {
	b.ReportAllocs()
	tf, tb := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	swap := false
	for b.Loop() {
		var f, s time.Duration
		if swap {
			t0 := time.Now()
			base()
			t1 := time.Now()
			fast()
			f, s = time.Since(t1), t1.Sub(t0)
		} else {
			t0 := time.Now()
			fast()
			t1 := time.Now()
			base()
			f, s = t1.Sub(t0), time.Since(t1)
		}
		swap = !swap
		tf, tb = min(tf, f), min(tb, s)
	}
	b.ReportMetric(float64(tf), "fast-min-ns")
	b.ReportMetric(float64(tb), "base-min-ns")
	b.ReportMetric(float64(tb)/float64(tf), "speedup")
}

// BenchmarkElementwiseArith measures the float32 paths of a ResNet stage
// (1×256×56×56): an operand of the same shape, a per-channel [256,1,1]
// one, a scalar and a last-axis vector; each against the per-element
// function path (binaryMap) the run loops replace.
//
//	go test ./model -run '^$' -bench ElementwiseArith -benchtime 40x
func BenchmarkElementwiseArith(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := elemRandF32(r, []int{1, 256, 56, 56})
	for _, c := range []struct {
		name string
		y    *tensor.Tensor
	}{
		{"same", elemRandF32(r, []int{1, 256, 56, 56})},
		{"channel", elemRandF32(r, []int{256, 1, 1})},
		{"scalar", tensor.Scalar(float32(0.5))},
		{"lastaxis", elemRandF32(r, []int{56})},
	} {
		for _, op := range []string{"Add", "Mul"} {
			code := elemBinaryOps[op]
			f := func(p, q float32) float32 { return p + q }
			if op == "Mul" {
				f = func(p, q float32) float32 { return p * q }
			}
			b.Run(op+"/1x256x56x56/"+c.name, func(b *testing.B) {
				benchPair(b, func() {
					if _, err := elemBinary(op, code, x, c.y); err != nil {
						b.Fatal(err)
					}
				}, func() {
					if _, _, err := binaryMap(x.Data.([]float32), c.y.Data.([]float32), x.Shape, c.y.Shape, f); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// elemFuzzOps are the operators FuzzElementwise drives, with their input
// counts.
var elemFuzzOps = []struct {
	op    string
	opset int64
	nin   int
	attrs []*onnxpb.Attribute
}{
	{"Add", 14, 2, nil}, {"Sub", 14, 2, nil}, {"Mul", 14, 2, nil}, {"Div", 14, 2, nil},
	{"Pow", 15, 2, nil}, {"Mod", 13, 2, nil}, {"Mod", 13, 2, []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: 1}}},
	{"Min", 13, 3, nil}, {"Max", 13, 2, nil}, {"Sum", 13, 3, nil}, {"Mean", 13, 2, nil},
	{"Equal", 19, 2, nil}, {"Less", 13, 2, nil}, {"GreaterOrEqual", 16, 2, nil}, {"And", 7, 2, nil}, {"Xor", 7, 2, nil},
	{"Where", 16, 3, nil}, {"PRelu", 16, 2, nil}, {"Clip", 13, 3, nil},
	{"BitShift", 11, 2, []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("LEFT")}}},
	{"BitwiseAnd", 18, 2, nil}, {"BitwiseNot", 18, 1, nil},
	{"Relu", 14, 1, nil}, {"Sqrt", 13, 1, nil}, {"Abs", 13, 1, nil}, {"Neg", 13, 1, nil}, {"Sign", 13, 1, nil},
	{"Round", 22, 1, nil}, {"Erf", 13, 1, nil}, {"Exp", 13, 1, nil}, {"Sigmoid", 13, 1, nil}, {"Gelu", 20, 1, nil},
	{"HardSwish", 22, 1, nil}, {"Shrink", 9, 1, nil}, {"IsInf", 20, 1, nil}, {"IsNaN", 20, 1, nil}, {"Not", 1, 1, nil},
	{"Cast", 21, 1, castAttr(onnxpb.String)}, {"Cast", 21, 1, castAttr(onnxpb.Float16)}, {"Cast", 21, 1, castAttr(onnxpb.Int8)},
	{"Dropout", 22, 3, nil}, {"ConstantOfShape", 25, 1, nil},
}

// elemFuzzTensor decodes a small tensor from b: a type, a rank up to 4,
// dimensions up to 3, then values.
func elemFuzzTensor(b []byte) (*tensor.Tensor, []byte) {
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		v := b[0]
		b = b[1:]
		return v
	}
	dt := tensor.DataType(1 + next()%uint8(tensor.String))
	shape := make([]int, next()%5)
	for i := range shape {
		shape[i] = int(next() % 4)
	}
	t, _ := tensor.New(dt, shape)
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 3, 1e30, -1e-30, math.Inf(1), math.Inf(-1), math.NaN(), 127, -128, 300, 65504}
	vals := make([]float64, t.Len())
	picks := make([]byte, t.Len())
	for i := range vals {
		picks[i] = next()
		vals[i] = specials[picks[i]%uint8(len(specials))]
	}
	switch d := t.Data.(type) {
	case []string:
		for i, p := range picks {
			d[i] = []string{"1", "-2.5", "inf", "x", ""}[p%5]
		}
	case []bool:
		for i, v := range vals {
			d[i] = v > 0
		}
	default:
		if c, err := castTo(tensor.From([]int{len(vals)}, vals), dt); err == nil {
			tensor.CopyData(t.Data, c.Data)
		}
	}
	return t, b
}

// FuzzElementwise runs every operator of the elementwise families on
// arbitrary small tensors of every type: each answers a value or an
// error, never a panic; Add's answers match the index-walking definition.
func FuzzElementwise(f *testing.F) {
	f.Add([]byte{0, 9, 2, 2, 3, 1, 2, 3, 4, 5, 6, 9, 1, 3, 7})
	f.Add([]byte{16, 0, 1, 2, 9, 4, 1, 1, 9, 9, 3, 2, 3, 1, 2})
	f.Add([]byte{37, 13, 3, 1, 2, 1, 0, 5, 11})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := elemFuzzOps[int(b[0])%len(elemFuzzOps)]
		b = b[1:]
		in := make([]*tensor.Tensor, c.nin)
		for i := range in {
			in[i], b = elemFuzzTensor(b)
		}
		out, err := runOp(t, c.op, c.opset, 1, c.attrs, in...)
		if err != nil || c.op != "Add" {
			return
		}
		shape, want := elemNaive(in[0].Float64s(), in[1].Float64s(), in[0].Shape, in[1].Shape, func(x, y float64) float64 { return x + y })
		got := out[0].Float64s()
		if !slices.Equal(out[0].Shape, shape) || len(got) != len(want) {
			t.Fatalf("Add of %v and %v: shape %v, want %v", in[0].Shape, in[1].Shape, out[0].Shape, shape)
		}
		if in[0].DType == tensor.Float64 {
			for i := range got {
				if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("Add[%d] = %v, want %v", i, got[i], want[i])
				}
			}
		}
	})
}
