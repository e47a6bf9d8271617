package tensor

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestConversionsStopWithTheRequest: Cast, CastLike, BitCast and
// ConstantOfShape over more than ops.TickEvery elements stop with the
// request's error once it has ended, and answer under a live request.
func TestConversionsStopWithTheRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := ops.TickEvery + 1
	f := make([]float32, n)
	s := make([]string, n)
	for i := range f {
		f[i] = float32(i) / 4
		s[i] = "1.5"
	}
	x, strs := tensor.From([]int{n}, f), tensor.From([]int{n}, s)
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}{
		{"Cast", castAttr(onnxpb.Int32), []*tensor.Tensor{x}},
		{"Cast", castAttr(onnxpb.Float16), []*tensor.Tensor{x}},
		{"Cast", castAttr(onnxpb.Bool), []*tensor.Tensor{x}},
		{"Cast", castAttr(onnxpb.String), []*tensor.Tensor{x}},
		{"Cast", castAttr(onnxpb.Double), []*tensor.Tensor{strs}},
		{"CastLike", nil, []*tensor.Tensor{x, tensor.Scalar(int64(0))}},
		{"BitCast", castAttr(onnxpb.Int32), []*tensor.Tensor{x}},
		{"ConstantOfShape", []*onnxpb.Attribute{opstest.AttrTensor("value", tensor.Scalar(int8(3)))}, []*tensor.Tensor{opstest.I64s(2, int64(n))}},
		{"Range", nil, []*tensor.Tensor{tensor.Scalar(int16(-30000)), tensor.Scalar(int16(30000)), tensor.Scalar(int16(1))}},
	} {
		op, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: 26, Attrs: c.attrs}, len(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(ops.NewContext(ctx, nil, false), c.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under an ended request: %v", c.op, err)
		}
		if _, err := op.Run(ops.NewContext(context.Background(), nil, false), c.in); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
	}
}

// TestConversionsInPieces: conversions of more than ops.TickEvery
// elements, done piece by piece, give every element's own conversion.
func TestConversionsInPieces(t *testing.T) {
	n := 2*ops.TickEvery + 77
	f := make([]float64, n)
	for i := range f {
		f[i] = (float64(i) - float64(n)/2) * 1.37
	}
	x := tensor.From([]int{n}, f)
	bg := opstest.Background()
	y, err := CastToContext(bg, x, tensor.Int16)
	if err != nil {
		t.Fatal(err)
	}
	h, err := CastToContext(bg, x, tensor.Float16)
	if err != nil {
		t.Fatal(err)
	}
	str, err := CastToContext(bg, x, tensor.String)
	if err != nil {
		t.Fatal(err)
	}
	back, err := CastToContext(bg, str, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range f {
		if got := y.Data.([]int16)[i]; got != int16(int64(v)) {
			t.Fatalf("int16 of %v: %d", v, got)
		}
		if got := h.Data.([]tensor.F16)[i]; got != tensor.F16FromFloat64(v) {
			t.Fatalf("FP16 of %v: %v", v, got)
		}
		if got := str.Data.([]string)[i]; got != formatFloat(v, strconv.FormatFloat(v, 'e', -1, 64)) {
			t.Fatalf("string of %v: %q", v, got)
		}
	}
	if !slices.Equal(back.Data.([]float64), f) {
		t.Error("strings read back differ from the numbers written")
	}
	// BitCast and back restores every bit.
	bits := opstest.Run1(t, opstest.Node{Op: "BitCast", Opset: 26, Attrs: []*onnxpb.Attribute{opstest.AttrInt("to", int64(onnxpb.Int64))}}, x)
	for i, v := range bits.Data.([]int64) {
		if math.Float64frombits(uint64(v)) != f[i] {
			t.Fatalf("BitCast element %d: %x", i, v)
		}
	}
	// ConstantOfShape fills every element.
	k := opstest.Run1(t, opstest.Node{Op: "ConstantOfShape", Opset: 20, Attrs: []*onnxpb.Attribute{opstest.AttrTensor("value", tensor.Scalar(int8(-3)))}}, opstest.I64s(int64(n)))
	if slices.ContainsFunc(k.Data.([]int8), func(v int8) bool { return v != -3 }) {
		t.Error("ConstantOfShape left elements unfilled")
	}
}
