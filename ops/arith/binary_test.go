package arith

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestBinaryMatchesIndexWalk runs Add, Sub, Mul, Div, Min and Max over
// random broadcasting shapes (zero-size, scalar, rank 0 included) and
// checks every element against the index-walking definition.
func TestBinaryMatchesIndexWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f32 := map[binOp]func(x, y float32) float32{
		opAdd: func(x, y float32) float32 { return x + y }, opSub: func(x, y float32) float32 { return x - y },
		opMul: func(x, y float32) float32 { return x * y }, opDiv: func(x, y float32) float32 { return x / y },
		opMin: func(x, y float32) float32 { return min(x, y) }, opMax: func(x, y float32) float32 { return max(x, y) },
	}
	i32 := map[binOp]func(x, y int32) int32{
		opAdd: func(x, y int32) int32 { return x + y }, opSub: func(x, y int32) int32 { return x - y },
		opMul: func(x, y int32) int32 { return x * y }, opDiv: func(x, y int32) int32 { return x / y },
		opMin: func(x, y int32) int32 { return min(x, y) }, opMax: func(x, y int32) int32 { return max(x, y) },
	}
	for trial := 0; trial < 400; trial++ {
		as, bs := randShapes(r)
		if trial%2 == 1 {
			as, bs = bs, as
		}
		for op := opAdd; op <= opMax; op++ {
			a, b := randF32(r, as), randF32(r, bs)
			got, err := compute(nil, "op", op, a, b)
			if err != nil {
				t.Fatalf("%v %v: %v", as, bs, err)
			}
			shape, want := naive(a.Data.([]float32), b.Data.([]float32), as, bs, f32[op])
			if !ops.EqualShape(got.Shape, shape) || !slices.Equal(got.Data.([]float32), want) {
				t.Fatalf("op %d on %v and %v: got %v %v, want %v %v", op, as, bs, got.Shape, got.Data, shape, want)
			}
			ai, bi := randI32(r, as, false), randI32(r, bs, true)
			goti, err := compute(nil, "op", op, ai, bi)
			if err != nil {
				t.Fatal(err)
			}
			_, wanti := naive(ai.Data.([]int32), bi.Data.([]int32), as, bs, i32[op])
			if !slices.Equal(goti.Data.([]int32), wanti) {
				t.Fatalf("int32 op %d on %v and %v: got %v, want %v", op, as, bs, goti.Data, wanti)
			}
		}
	}
}

// TestAddMul checks the exported AddTensors and MulTensors against the operators.
func TestAddMul(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a, b := randF32(r, []int{2, 3, 4}), randF32(r, []int{3, 1})
	for op, f := range map[string]func(a, b *tensor.Tensor) (*tensor.Tensor, error){"Add": AddTensors, "Mul": MulTensors} {
		got, err := f(a, b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := run(t, op, 14, nil, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Shape, want[0].Shape) || !slices.Equal(got.Data.([]float32), want[0].Data.([]float32)) {
			t.Errorf("%s differs from the operator", op)
		}
		if _, err := f(a, tensor.From([]int{1}, []int32{1})); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s of FP32 and INT32: %v", op, err)
		}
	}
}

func TestBinaryErrors(t *testing.T) {
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
		_, err := run(t, "Div", 14, nil, c.a, c.b)
		if !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: error %v, want an input error", c.name, err)
		}
	}
	if _, err := run(t, "Add", 14, nil, f); err == nil {
		t.Error("Add of one input compiled")
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
		out, err := run(t, op, 14, nil, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Data.([]int8); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", op, got, want)
		}
	}
	u := tensor.From([]int{2}, []uint8{3, 250})
	out, err := run(t, "Sub", 14, nil, u, tensor.From([]int{2}, []uint8{5, 10}))
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
		out, err := run(t, op, 14, nil, tensor.From([]int{n}, ah), tensor.From([]int{n}, bh))
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range out[0].Data.([]tensor.F16) {
			want := tensor.F16FromFloat64(f(float64(ah[i].Float32()), float64(bh[i].Float32())))
			if got != want && !(got.Float32() != got.Float32() && want.Float32() != want.Float32()) {
				t.Fatalf("FP16 %s(%v, %v) = %v, want %v", op, ah[i].Float32(), bh[i].Float32(), got.Float32(), want.Float32())
			}
		}
		out, err = run(t, op, 14, nil, tensor.From([]int{n}, ab), tensor.From([]int{n}, bb))
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

// TestFloat32VectorRuns: float32 Add, Mul and Max over long contiguous
// runs (same shapes, and a broadcast operand's trailing axes) on every
// vector table this CPU runs give the plain loop's bits, special values
// (NaN, ±0, ±Inf, subnormals) and vector tails included.
func TestFloat32VectorRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40, math.MaxFloat32}
	fill := func(shape []int) *tensor.Tensor {
		x := randF32(r, shape)
		d := x.Data.([]float32)
		for i := range d {
			if r.IntN(8) == 0 {
				d[i] = special[r.IntN(len(special))]
			}
		}
		return x
	}
	ref := map[binOp]func(x, y float32) float32{
		opAdd: func(x, y float32) float32 { return x + y },
		opMul: func(x, y float32) float32 { return x * y },
		opMax: func(x, y float32) float32 { return max(x, y) },
	}
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		c := ops.NewContext(context.Background(), e, false)
		for _, sh := range [][2][]int{
			{{vectorRun}, {vectorRun}}, {{vectorRun + 1}, {vectorRun + 1}}, {{1000}, {1000}}, {{4099}, {4099}},
			{{3, 1000}, {1000}}, {{2, 130}, {2, 1, 130}}, {{vectorRun - 1}, {vectorRun - 1}},
		} {
			for op, f := range ref {
				a, b := fill(sh[0]), fill(sh[1])
				got, err := compute(c, "op", op, a, b)
				if err != nil {
					t.Fatal(err)
				}
				shape, want := naive(a.Data.([]float32), b.Data.([]float32), sh[0], sh[1], f)
				g := got.Data.([]float32)
				if !ops.EqualShape(got.Shape, shape) || len(g) != len(want) {
					t.Fatalf("%s op %d %v %v: shape %v, want %v", tb.Name, op, sh[0], sh[1], got.Shape, shape)
				}
				for i := range want {
					if math.Float32bits(g[i]) != math.Float32bits(want[i]) && !(g[i] != g[i] && want[i] != want[i]) {
						t.Fatalf("%s op %d %v %v: [%d] = %v, the plain loop's %v", tb.Name, op, sh[0], sh[1], i, g[i], want[i])
					}
				}
			}
		}
		e.Close()
	}
}
