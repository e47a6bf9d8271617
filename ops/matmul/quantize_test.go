package matmul

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// scaleAt returns the index of the scale of element (i, j, l) of a
// [2, 3, 4] tensor: per tensor (scale of shape []), per axis (along
// axis), or blocked along axis by block.
func scaleAt(i, j, l int, ss []int, axis, block int) int {
	idx := []int{i, j, l}
	switch {
	case len(ss) == 0:
		return 0
	case len(ss) == 1:
		return idx[axis]
	}
	idx[axis] /= block
	return (idx[0]*ss[1]+idx[1])*ss[2] + idx[2]
}

// TestQuantizeDequantize: QuantizeLinear and DequantizeLinear per tensor,
// per axis and blocked, with and without zero points, into each integer
// type, against the definition element by element (rounding half to
// even, saturating).
func TestQuantizeDequantize(t *testing.T) {
	x := make([]float32, 24)
	for i := range x {
		x[i] = float32(i-12) * 2.5 // ties at odd multiples of 1.25 under scale 0.5 and 2
	}
	x[3], x[20] = 1e6, -1e6 // saturate
	xt := tensor.From([]int{2, 3, 4}, x)
	for _, c := range []struct {
		name        string
		scale       []int // its shape
		axis, block int
	}{
		{"per tensor", nil, 1, 0},
		{"per axis 1", []int{3}, 1, 0},
		{"per axis -1", []int{4}, 2, 0},
		{"blocked", []int{2, 3, 2}, 2, 2},
		{"blocked, a short last block", []int{2, 2, 4}, 1, 2},
	} {
		ns := ops.ProdInts(c.scale)
		sv := make([]float32, ns)
		for i := range sv {
			sv[i] = []float32{0.5, 2, 5, 0.25}[i%4]
		}
		scale := tensor.From(c.scale, sv)
		for _, dt := range []tensor.DataType{tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16} {
			lo, hi, _ := IntRange(dt)
			zv := make([]float64, ns)
			for i := range zv {
				zv[i] = math.Round(lo + (hi-lo)*float64(i%3)/4)
			}
			zp := cast(t, tensor.From(c.scale, zv), dt)
			axis := int64(c.axis)
			if c.name == "per axis -1" {
				axis = -1
			}
			attrs := []*onnxpb.Attribute{attrInt("axis", axis), attrInt("block_size", int64(c.block))}
			q, _ := mustCompile(t, spec{op: "QuantizeLinear", opset: 21, inputs: 3, attrs: attrs})
			y := run1(t, q, nil, xt, scale, zp)
			dq, _ := mustCompile(t, spec{op: "DequantizeLinear", opset: 21, inputs: 3, attrs: attrs})
			z := run1(t, dq, nil, y, scale, zp)
			yv, zf := cast(t, y, tensor.Float64).Data.([]float64), z.Data.([]float32)
			if y.DType != dt || !slices.Equal(y.Shape, xt.Shape) || !slices.Equal(z.Shape, xt.Shape) {
				t.Fatalf("%s %v: %v%v, %v", c.name, dt, y.DType, y.Shape, z.Shape)
			}
			for i := 0; i < 2; i++ {
				for j := 0; j < 3; j++ {
					for l := 0; l < 4; l++ {
						e := (i*3+j)*4 + l
						s := scaleAt(i, j, l, c.scale, c.axis, max(c.block, 1))
						want := min(max(math.RoundToEven(float64(x[e]/sv[s]))+zv[s], lo), hi)
						if yv[e] != want {
							t.Fatalf("%s %v: q[%d] = %v, want %v", c.name, dt, e, yv[e], want)
						}
						if back := float32(want-zv[s]) * sv[s]; zf[e] != back {
							t.Fatalf("%s %v: dq[%d] = %v, want %v", c.name, dt, e, zf[e], back)
						}
					}
				}
			}
		}
	}
}

// TestQuantizeLinearTypes: without a zero point QuantizeLinear makes
// UINT8, or output_dtype's type; INT32 and non-integer outputs are not
// implemented.
func TestQuantizeLinearTypes(t *testing.T) {
	x := tensor.From([]int{3}, []float32{-300, 1.5, 300})
	s := tensor.Scalar(float32(1))
	q, _ := mustCompile(t, spec{op: "QuantizeLinear", opset: 13, inputs: 2})
	if y := run1(t, q, nil, x, s); y.DType != tensor.Uint8 || !slices.Equal(y.Data.([]uint8), []uint8{0, 2, 255}) {
		t.Errorf("default: %v %v", y.DType, y.Data)
	}
	q, _ = mustCompile(t, spec{op: "QuantizeLinear", opset: 21, inputs: 2, attrs: []*onnxpb.Attribute{attrInt("output_dtype", int64(onnxpb.Int8))}})
	if y := run1(t, q, nil, x, s); y.DType != tensor.Int8 || !slices.Equal(y.Data.([]int8), []int8{-128, 2, 127}) {
		t.Errorf("output_dtype INT8: %v %v", y.DType, y.Data)
	}
	for _, dt := range []onnxpb.DataType{onnxpb.Int32, onnxpb.Float} {
		if _, _, err := compile(t, spec{op: "QuantizeLinear", opset: 21, inputs: 2, attrs: []*onnxpb.Attribute{attrInt("output_dtype", int64(dt))}}); !errors.Is(err, ops.ErrUnsupported) {
			t.Errorf("output_dtype %v: %v, want unsupported", dt, err)
		}
	}
	if _, _, err := compile(t, spec{op: "DequantizeLinear", opset: 21, inputs: 2, attrs: []*onnxpb.Attribute{attrInt("output_dtype", int64(onnxpb.Float16))}}); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("DequantizeLinear to FLOAT16: %v, want unsupported", err)
	}
}

// TestQuantizeErrors: inputs the operators cannot take are the request's
// error.
func TestQuantizeErrors(t *testing.T) {
	x := tensor.From([]int{2, 3}, make([]float32, 6))
	xq := tensor.From([]int{2, 3}, make([]int8, 6))
	s3 := tensor.From([]int{3}, []float32{1, 1, 1})
	q, _ := mustCompile(t, spec{op: "QuantizeLinear", opset: 13, inputs: 3})
	dq, _ := mustCompile(t, spec{op: "DequantizeLinear", opset: 13, inputs: 3})
	for _, c := range []struct {
		name string
		op   ops.Operator
		in   []*tensor.Tensor
	}{
		{"a float64 x", q, []*tensor.Tensor{tensor.From([]int{1}, []float64{1}), tensor.Scalar(float32(1)), nil}},
		{"a scale of the wrong axis", q, []*tensor.Tensor{x, tensor.From([]int{2}, []float32{1, 1}), nil}},
		{"a zero point of another shape", q, []*tensor.Tensor{x, s3, tensor.From([]int{2}, []uint8{0, 0})}},
		{"an INT32 zero point", q, []*tensor.Tensor{x, s3, tensor.From([]int{3}, []int32{0, 0, 0})}},
		{"a float64 scale", dq, []*tensor.Tensor{xq, tensor.From([]int{3}, []float64{1, 1, 1}), nil}},
		{"a float x", dq, []*tensor.Tensor{x, s3, nil}},
		{"a zero point of another type", dq, []*tensor.Tensor{xq, s3, tensor.From([]int{3}, []uint8{0, 0, 0})}},
		{"a blocked scale that does not fit", dq, []*tensor.Tensor{xq, tensor.From([]int{2, 2}, make([]float32, 4)), nil}},
	} {
		if _, err := run(c.op, nil, c.in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", c.name, err)
		}
	}
}

// TestDynamicQuantizeLinear: the example of ONNX's operator reference,
// an input of zeros, and the request's error for a non-FP32 input.
func TestDynamicQuantizeLinear(t *testing.T) {
	op, _ := mustCompile(t, spec{op: "DynamicQuantizeLinear", opset: 11, inputs: 1, outputs: 3})
	out, err := run(op, nil, tensor.From([]int{6}, []float32{0, 2, -3, -2.5, 1.34, 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	if y := out[0].Data.([]uint8); !slices.Equal(y, []uint8{153, 255, 0, 26, 221, 179}) {
		t.Errorf("y = %v", y)
	}
	if s, z := out[1].Data.([]float32)[0], out[2].Data.([]uint8)[0]; s != float32(5)/255 || z != 153 {
		t.Errorf("scale %v, zero point %v", s, z)
	}
	out, err = run(op, nil, tensor.From([]int{2, 2}, make([]float32, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if y := out[0]; !slices.Equal(y.Shape, []int{2, 2}) || !slices.Equal(y.Data.([]uint8), make([]uint8, 4)) || out[1].Data.([]float32)[0] != 0 || out[2].Data.([]uint8)[0] != 0 {
		t.Errorf("zeros: %v %v %v", y.Data, out[1].Data, out[2].Data)
	}
	if _, err := run(op, nil, tensor.From([]int{1}, []float64{1})); !errors.Is(err, ops.ErrInput) {
		t.Errorf("float64: %v, want an input error", err)
	}
}
