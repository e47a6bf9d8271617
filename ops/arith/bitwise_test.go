package arith

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestBitOperators(t *testing.T) {
	left := []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("LEFT")}}
	right := []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("RIGHT")}}
	x := tensor.From([]int{4}, []uint8{1, 3, 255, 16})
	s := tensor.From([]int{4}, []uint8{1, 7, 8, 200})
	out, err := run(t, "BitShift", 11, left, x, s)
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{2, 128, 0, 0}) {
		t.Errorf("LEFT = %v, %v", out, err)
	}
	out, err = run(t, "BitShift", 11, right, x, tensor.Scalar(uint8(1)))
	if err != nil || !slices.Equal(out[0].Data.([]uint8), []uint8{0, 1, 127, 8}) {
		t.Errorf("RIGHT = %v, %v", out, err)
	}
	if _, err := run(t, "BitShift", 11, []*onnxpb.Attribute{{Name: "direction", Type: onnxpb.AttrString, S: []byte("UP")}}, x, s); err == nil {
		t.Error("direction UP compiled")
	}
	if _, err := run(t, "BitShift", 11, left, tensor.From([]int{1}, []int8{1}), tensor.From([]int{1}, []int8{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("signed BitShift: %v", err)
	}
	a := tensor.From([]int{2, 2}, []int16{0x0f0f, -1, 5, 0})
	b := tensor.From([]int{2}, []int16{0x00ff, 3})
	for op, want := range map[string][]int16{"BitwiseAnd": {0x000f, 3, 5, 0}, "BitwiseOr": {0x0fff, -1, 0xff, 3}, "BitwiseXor": {0x0ff0, -4, 0xfa, 3}} {
		out, err := run(t, op, 18, nil, a, b)
		if err != nil || !slices.Equal(out[0].Data.([]int16), want) {
			t.Errorf("%s = %v, %v; want %v", op, out, err, want)
		}
		if _, err := run(t, op, 18, nil, tensor.Scalar(float32(1)), tensor.Scalar(float32(1))); !errors.Is(err, ops.ErrInput) {
			t.Errorf("float %s: %v", op, err)
		}
	}
	out, err = run(t, "BitwiseNot", 18, nil, tensor.From([]int{2}, []int8{0, -128}))
	if err != nil || !slices.Equal(out[0].Data.([]int8), []int8{-1, 127}) {
		t.Errorf("BitwiseNot = %v, %v", out, err)
	}
	out, err = run(t, "BitwiseNot", 18, nil, tensor.From([]int{2}, []uint64{0, 1}))
	if err != nil || !slices.Equal(out[0].Data.([]uint64), []uint64{1<<64 - 1, 1<<64 - 2}) {
		t.Errorf("uint64 BitwiseNot = %v, %v", out, err)
	}
	if _, err := run(t, "BitwiseNot", 18, nil, tensor.From([]int{1}, []float32{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("float BitwiseNot: %v", err)
	}
}
