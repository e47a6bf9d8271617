package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestCompareMatchesIndexWalk checks the five comparisons over random
// broadcasting shapes on int32 and float32 (with NaN) against the
// index-walking definition.
func TestCompareMatchesIndexWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	defs := map[string]func(x, y float64) bool{
		"Equal": func(x, y float64) bool { return x == y }, "Less": func(x, y float64) bool { return x < y },
		"Greater": func(x, y float64) bool { return x > y }, "LessOrEqual": func(x, y float64) bool { return x <= y },
		"GreaterOrEqual": func(x, y float64) bool { return x >= y },
	}
	for trial := 0; trial < 100; trial++ {
		as, bs := elemRandShapes(r)
		a, b := elemRandI32(r, as, false), elemRandI32(r, bs, false)
		af, bf := tensor.From(as, convert[float32](a.Data.([]int32))), tensor.From(bs, convert[float32](b.Data.([]int32)))
		if n := af.Len(); n > 0 {
			af.Data.([]float32)[r.IntN(n)] = float32(math.NaN())
		}
		for op, f := range defs {
			for _, pair := range [][2]*tensor.Tensor{{a, b}, {af, bf}} {
				out, err := runOp(t, op, 16, 1, nil, pair[0], pair[1])
				if err != nil {
					t.Fatal(err)
				}
				shape, want := elemNaive(pair[0].Float64s(), pair[1].Float64s(), as, bs, f)
				if out[0].DType != tensor.Bool || !slices.Equal(out[0].Shape, shape) || !slices.Equal(out[0].Data.([]bool), want) {
					t.Fatalf("%s on %v %v and %v: got %v, want %v", op, pair[0].DType, as, bs, out[0].Data, want)
				}
			}
		}
	}
}

func TestCompareTypes(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{negZero, float32(math.NaN()), 1}))
	h2 := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0, float32(math.NaN()), 2}))
	out, err := runOp(t, "Equal", 19, 1, nil, h, h2)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, false, false}) {
		t.Errorf("FP16 Equal = %v, %v", out, err)
	}
	out, err = runOp(t, "Less", 13, 1, nil, h, h2)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, true}) {
		t.Errorf("FP16 Less = %v, %v", out, err)
	}
	s := tensor.From([]int{2, 2}, []string{"a", "bb", "", "a"})
	out, err = runOp(t, "Equal", 19, 1, nil, s, tensor.From([]int{2}, []string{"a", "bb"}))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, true, false, false}) {
		t.Errorf("string Equal = %v, %v", out, err)
	}
	out, err = runOp(t, "Equal", 13, 1, nil, tensor.From([]int{2}, []bool{true, false}), tensor.Scalar(false))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, true}) {
		t.Errorf("bool Equal = %v, %v", out, err)
	}
	out, err = runOp(t, "Greater", 13, 1, nil, tensor.From([]int{2}, []uint64{1 << 63, 1}), tensor.Scalar(uint64(2)))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, false}) {
		t.Errorf("uint64 Greater = %v, %v", out, err)
	}
	for _, c := range []struct {
		op   string
		a, b *tensor.Tensor
	}{
		{"Less", s, s},
		{"Greater", tensor.Scalar(true), tensor.Scalar(false)},
		{"Equal", tensor.Scalar(int32(1)), tensor.Scalar(int64(1))},
		{"Equal", tensor.From([]int{2}, []int32{1, 2}), tensor.From([]int{3}, []int32{1, 2, 3})},
	} {
		if _, err := runOp(t, c.op, 19, 1, nil, c.a, c.b); !errors.Is(err, ErrInput) {
			t.Errorf("%s(%v, %v): %v", c.op, c.a.DType, c.b.DType, err)
		}
	}
}

func TestLogic(t *testing.T) {
	a := tensor.From([]int{2, 2}, []bool{true, true, false, false})
	b := tensor.From([]int{2}, []bool{true, false})
	for op, want := range map[string][]bool{
		"And": {true, false, false, false}, "Or": {true, true, true, false}, "Xor": {false, true, true, false},
	} {
		out, err := runOp(t, op, 7, 1, nil, a, b)
		if err != nil || !slices.Equal(out[0].Data.([]bool), want) || !slices.Equal(out[0].Shape, []int{2, 2}) {
			t.Errorf("%s = %v, %v; want %v", op, out, err, want)
		}
		if _, err := runOp(t, op, 7, 1, nil, a, tensor.From([]int{2}, []int32{1, 0})); !errors.Is(err, ErrInput) {
			t.Errorf("%s on INT32: %v", op, err)
		}
	}
	out, err := runOp(t, "Not", 1, 1, nil, a)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, true, true}) {
		t.Errorf("Not = %v, %v", out, err)
	}
	if _, err := runOp(t, "Not", 1, 1, nil, tensor.Scalar(float32(1))); !errors.Is(err, ErrInput) {
		t.Errorf("Not on FP32: %v", err)
	}
}

func TestIsNaNIsInf(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	vals := []float64{1, inf, -inf, nan, 0}
	for _, x := range []*tensor.Tensor{
		tensor.From([]int{5}, vals),
		tensor.From([]int{5}, convert[float32](vals)),
		tensor.From([]int{5}, tensor.Float32ToHalf[tensor.BF16](convert[float32](vals))),
		tensor.From([]int{5}, tensor.Float32ToHalf[tensor.F16](convert[float32](vals))),
	} {
		out, err := runOp(t, "IsNaN", 20, 1, nil, x)
		if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, false, true, false}) {
			t.Errorf("IsNaN %v = %v, %v", x.DType, out, err)
		}
		for _, c := range []struct {
			neg, pos int64
			want     []bool
		}{
			{1, 1, []bool{false, true, true, false, false}},
			{0, 1, []bool{false, true, false, false, false}},
			{1, 0, []bool{false, false, true, false, false}},
			{0, 0, []bool{false, false, false, false, false}},
		} {
			attrs := []*onnxpb.Attribute{{Name: "detect_negative", Type: onnxpb.AttrInt, I: c.neg}, {Name: "detect_positive", Type: onnxpb.AttrInt, I: c.pos}}
			out, err := runOp(t, "IsInf", 20, 1, attrs, x)
			if err != nil || !slices.Equal(out[0].Data.([]bool), c.want) {
				t.Errorf("IsInf %v neg=%d pos=%d = %v, %v", x.DType, c.neg, c.pos, out, err)
			}
		}
	}
	if _, err := runOp(t, "IsNaN", 20, 1, nil, tensor.Scalar(int32(1))); !errors.Is(err, ErrInput) {
		t.Errorf("IsNaN on INT32: %v", err)
	}
}

// TestWhere checks three-way broadcasting against the index walk, and
// that every element type passes through.
func TestWhere(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for trial := 0; trial < 200; trial++ {
		cs, xs := elemRandShapes(r)
		_, ys := elemRandShapes(r)
		if _, err := broadcastShapes(cs, xs, ys); err != nil {
			continue
		}
		n, _ := tensor.NumElements(cs)
		cond := make([]bool, n)
		for i := range cond {
			cond[i] = r.IntN(2) == 0
		}
		x, y := elemRandF32(r, xs), elemRandF32(r, ys)
		out, err := runOp(t, "Where", 16, 1, nil, tensor.From(cs, cond), x, y)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := broadcastShapes(cs, xs, ys)
		it := tensor.NewIter(shape, tensor.BroadcastStrides(cs, shape), tensor.BroadcastStrides(xs, shape), tensor.BroadcastStrides(ys, shape))
		want := make([]float32, 0, out[0].Len())
		for it.Next() {
			v := y.Data.([]float32)[it.Off(2)]
			if cond[it.Off(0)] {
				v = x.Data.([]float32)[it.Off(1)]
			}
			want = append(want, v)
		}
		if !slices.Equal(out[0].Shape, shape) || !slices.Equal(out[0].Data.([]float32), want) {
			t.Fatalf("Where on %v %v %v: got %v, want %v", cs, xs, ys, out[0].Data, want)
		}
	}
	c := tensor.From([]int{2}, []bool{true, false})
	for _, pair := range [][2]*tensor.Tensor{
		{tensor.From([]int{2}, []string{"a", "b"}), tensor.Scalar("z")},
		{tensor.From([]int{2}, []bool{true, true}), tensor.Scalar(false)},
		{tensor.From([]int{2}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 2})), tensor.Scalar(tensor.BF16From(9))},
		{tensor.From([]int{2}, []uint16{1, 2}), tensor.Scalar(uint16(9))},
	} {
		out, err := runOp(t, "Where", 16, 1, nil, c, pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		want, _ := castTo(tensor.From([]int{2}, []string{"a", "z"}), pair[0].DType)
		if pair[0].DType == tensor.Bool {
			want = tensor.From([]int{2}, []bool{true, false})
		} else if pair[0].DType != tensor.String {
			want, _ = castTo(tensor.From([]int{2}, []float32{1, 9}), pair[0].DType)
		}
		if out[0].DType != pair[0].DType || fmt.Sprint(out[0].Data) != fmt.Sprint(want.Data) {
			t.Errorf("Where on %v = %v, want %v", pair[0].DType, out[0].Data, want.Data)
		}
	}
	for _, bad := range [][3]*tensor.Tensor{
		{tensor.Scalar(int32(1)), tensor.Scalar(float32(1)), tensor.Scalar(float32(2))},
		{c, tensor.Scalar(float32(1)), tensor.Scalar(float64(2))},
		{c, tensor.From([]int{3}, []float32{1, 2, 3}), tensor.Scalar(float32(2))},
	} {
		if _, err := runOp(t, "Where", 16, 1, nil, bad[0], bad[1], bad[2]); !errors.Is(err, ErrInput) {
			t.Errorf("Where(%v, %v, %v): %v", bad[0].DType, bad[1].DType, bad[2].DType, err)
		}
	}
}
