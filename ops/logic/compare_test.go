package logic

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
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
		as, bs := randShapes(r)
		a, b := randI32(r, as), randI32(r, bs)
		af, bf := tensor.From(as, f32s(a.Data.([]int32))), tensor.From(bs, f32s(b.Data.([]int32)))
		if n := af.Len(); n > 0 {
			af.Data.([]float32)[r.IntN(n)] = float32(math.NaN())
		}
		for op, f := range defs {
			for _, pair := range [][2]*tensor.Tensor{{a, b}, {af, bf}} {
				out, err := opstest.Run(t, opstest.Node{Op: op, Opset: 16}, pair[0], pair[1])
				if err != nil {
					t.Fatal(err)
				}
				shape, want := naive(pair[0].Float64s(), pair[1].Float64s(), as, bs, f)
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
	out, err := opstest.Run(t, opstest.Node{Op: "Equal", Opset: 19}, h, h2)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, false, false}) {
		t.Errorf("FP16 Equal = %v, %v", out, err)
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Less", Opset: 13}, h, h2)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, true}) {
		t.Errorf("FP16 Less = %v, %v", out, err)
	}
	s := tensor.From([]int{2, 2}, []string{"a", "bb", "", "a"})
	out, err = opstest.Run(t, opstest.Node{Op: "Equal", Opset: 19}, s, tensor.From([]int{2}, []string{"a", "bb"}))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{true, true, false, false}) {
		t.Errorf("string Equal = %v, %v", out, err)
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Equal", Opset: 13}, tensor.From([]int{2}, []bool{true, false}), tensor.Scalar(false))
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, true}) {
		t.Errorf("bool Equal = %v, %v", out, err)
	}
	out, err = opstest.Run(t, opstest.Node{Op: "Greater", Opset: 13}, tensor.From([]int{2}, []uint64{1 << 63, 1}), tensor.Scalar(uint64(2)))
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
		if _, err := opstest.Run(t, opstest.Node{Op: c.op, Opset: 19}, c.a, c.b); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s(%v, %v): %v", c.op, c.a.DType, c.b.DType, err)
		}
	}
}

// TestCompareOpsets: LessOrEqual and GreaterOrEqual start at opset 12,
// the others at 7; a node of one input is refused at load.
func TestCompareOpsets(t *testing.T) {
	one := tensor.Scalar(int32(1))
	if _, err := opstest.Run(t, opstest.Node{Op: "LessOrEqual", Opset: 11}, one, one); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("LessOrEqual at opset 11: %v", err)
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "Equal", Opset: 6}, one, one); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("Equal at opset 6: %v", err)
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "Equal", Opset: 7}, one); err == nil {
		t.Error("Equal of one input compiled")
	}
}
