package arith

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestMod(t *testing.T) {
	a := []int64{-4, 7, 5, -5, 0}
	b := []int64{3, -3, 3, -3, 2}
	for fmod, want := range map[int64][]int64{0: {2, -2, 2, -2, 0}, 1: {-1, 1, 2, -2, 0}} {
		attr := []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: fmod}}
		out, err := run(t, "Mod", 13, attr, tensor.From([]int{5}, a), tensor.From([]int{5}, b))
		if err != nil || !slices.Equal(out[0].Data.([]int64), want) {
			t.Errorf("int64 Mod fmod=%d = %v, %v; want %v", fmod, out, err, want)
		}
		fa, fb := convert[float64](a), convert[float64](b)
		fa[0], fb[0] = -4.5, 2
		out, err = run(t, "Mod", 13, attr, tensor.From([]int{5}, fa), tensor.From([]int{5}, fb))
		wantF := convert[float64](want)
		wantF[0] = 1.5
		if fmod == 1 {
			wantF[0] = -0.5
		}
		if err != nil || !slices.Equal(out[0].Data.([]float64), wantF) {
			t.Errorf("float64 Mod fmod=%d = %v, %v; want %v", fmod, out, err, wantF)
		}
	}
	out, err := run(t, "Mod", 13, nil, tensor.From([]int{2}, []uint8{200, 7}), tensor.From([]int{1}, []uint8{6}))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{2, 1}) {
		t.Errorf("uint8 Mod = %v, %v", out, err)
	}
	if _, err := run(t, "Mod", 13, nil, tensor.From([]int{1}, []int32{5}), tensor.From([]int{1}, []int32{0})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Mod by zero: %v", err)
	}
	// A float divisor of zero is NaN, not an error.
	out, err = run(t, "Mod", 13, []*onnxpb.Attribute{{Name: "fmod", Type: onnxpb.AttrInt, I: 1}}, tensor.Scalar(float32(1)), tensor.Scalar(float32(0)))
	if err != nil || out[0].Data.([]float32)[0] == out[0].Data.([]float32)[0] {
		t.Errorf("float Mod by zero = %v, %v", out, err)
	}
	// numpy's mod gives a zero remainder the divisor's sign.
	out, err = run(t, "Mod", 13, nil, tensor.From([]int{2}, []float32{4, -4}), tensor.From([]int{2}, []float32{-2, 2}))
	if g := out[0].Data.([]float32); err != nil || !(g[0] == 0 && 1/g[0] < 0) || !(g[1] == 0 && 1/g[1] > 0) {
		t.Errorf("signed zero remainders = %v, %v", out, err)
	}
	if _, err := run(t, "Mod", 13, nil, tensor.Scalar(int32(1)), tensor.Scalar(int64(1))); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Mod of INT32 and INT64: %v", err)
	}
}
