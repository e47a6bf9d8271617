package pool

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// TestPoolTypes runs the pools over every type ONNX allows them: the
// result is the float32 result in that type.
func TestPoolTypes(t *testing.T) {
	x := tensor.From([]int{1, 1, 3, 3}, []float32{1, -2, 3, 4, 5, -6, 7, 8, 9})
	attrs := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 2), opstest.AttrInts("pads", 1, 0, 0, 1)}
	for _, op := range []string{"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"} {
		a := attrs
		if strings.HasPrefix(op, "Global") {
			a = nil
		}
		want, err := run(t, 22, op, x, 1, a...)
		if err != nil {
			t.Fatal(err)
		}
		types := []tensor.DataType{tensor.Float64, tensor.Float16, tensor.BFloat16}
		if op == "MaxPool" {
			types = append(types, tensor.Int8)
		}
		for _, dt := range types {
			xt, err := tensorops.CastTo(x, dt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(t, 22, op, xt, 1, a...)
			if err != nil {
				t.Fatalf("%s %v: %v", op, dt, err)
			}
			if got[0].DType != dt || !ops.EqualShape(got[0].Shape, want[0].Shape) {
				t.Fatalf("%s %v: got %v %v", op, dt, got[0].DType, got[0].Shape)
			}
			g, w := got[0].Float64s(), want[0].Float64s()
			for i := range w {
				tol := 1e-6
				switch dt {
				case tensor.Float16:
					tol = 1e-3
				case tensor.BFloat16:
					tol = 8e-3
				case tensor.Int8:
					tol = 0
				}
				if math.Abs(g[i]-w[i]) > tol*(1+math.Abs(w[i])) {
					t.Errorf("%s %v: element %d = %v, float32 gives %v", op, dt, i, g[i], w[i])
				}
			}
		}
		if _, err := run(t, 22, op, tensor.From([]int{1, 1, 2, 2}, []int32{1, 2, 3, 4}), 1, a...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s over INT32: %v, want an input error", op, err)
		}
	}
	// uint8 max pooling, checked by hand.
	u := tensor.From([]int{1, 1, 2, 3}, []uint8{0, 200, 3, 255, 1, 2})
	got, err := run(t, 22, "MaxPool", u, 1, opstest.AttrInts("kernel_shape", 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Data.([]uint8), []uint8{255, 200}) {
		t.Errorf("uint8 MaxPool = %v", got[0].Data)
	}
}

// TestPoolEdgeShapes covers empty batches, windows that only cover
// padding, rank-2 global pooling and outputs of zero elements.
func TestPoolEdgeShapes(t *testing.T) {
	// No images: an empty output of the right shape.
	got, err := run(t, 22, "MaxPool", tensor.From([]int{0, 3, 4, 4}, []float32{}), 2, opstest.AttrInts("kernel_shape", 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !ops.EqualShape(got[0].Shape, []int{0, 3, 3, 3}) || got[0].Len() != 0 || !ops.EqualShape(got[1].Shape, []int{0, 3, 3, 3}) {
		t.Errorf("empty batch: %v %v", got[0].Shape, got[1].Shape)
	}
	// A window over padding only: one input row, windows of two rows two
	// apart, padded by 1 before and 2 after. The window starting at -1
	// reads rows -1 and 1, both padding; the one at 0 reads 0 and 2.
	x := tensor.From([]int{1, 1, 1, 1}, []float32{5})
	attrs := []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 1), opstest.AttrInts("dilations", 2, 1), opstest.AttrInts("pads", 1, 0, 2, 0)}
	got, err = run(t, 22, "MaxPool", x, 2, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	ys, is := got[0].Data.([]float32), got[1].Data.([]int64)
	if !ops.EqualShape(got[0].Shape, []int{1, 1, 2, 1}) || !math.IsInf(float64(ys[0]), -1) || is[0] != -1 || ys[1] != 5 || is[1] != 0 {
		t.Errorf("padding-only window: Y %v %v, Indices %v", got[0].Shape, ys, is)
	}
	avg, err := run(t, 22, "AveragePool", x, 1, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	if v := avg[0].Data.([]float32); !math.IsNaN(float64(v[0])) || v[1] != 5 {
		t.Errorf("AveragePool over padding only: %v (0 elements: NaN)", v)
	}
	avg, err = run(t, 22, "AveragePool", x, 1, append(attrs, opstest.AttrInt("count_include_pad", 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if v := avg[0].Data.([]float32); v[0] != 0 || v[1] != 2.5 {
		t.Errorf("AveragePool counting padding: %v", v)
	}
	// Global pools of a rank-2 input pool one element per plane.
	g, err := run(t, 22, "GlobalAveragePool", tensor.From([]int{2, 2}, []float32{1, 2, 3, 4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !ops.EqualShape(g[0].Shape, []int{2, 2}) || !slices.Equal(g[0].Data.([]float32), []float32{1, 2, 3, 4}) {
		t.Errorf("rank-2 GlobalAveragePool: %v %v", g[0].Shape, g[0].Data)
	}
	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"} {
		if _, err := run(t, 22, op, tensor.From([]int{1, 2, 0}, []float32{}), 1); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s over empty planes: %v", op, err)
		}
		if _, err := run(t, 22, op, tensor.Scalar(float32(1)), 1); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s of a scalar: %v", op, err)
		}
	}
	// A NaN wins a max, as in math.Max; MaxPool's index is the NaN's.
	gm, err := run(t, 22, "GlobalMaxPool", tensor.From([]int{1, 1, 3}, []float32{-1, float32(math.NaN()), 3}), 1)
	if err != nil || !math.IsNaN(float64(gm[0].Data.([]float32)[0])) {
		t.Errorf("GlobalMaxPool with NaN: %v %v", gm, err)
	}
	mp, err := run(t, 22, "MaxPool", tensor.From([]int{1, 1, 4}, []float32{-1, float32(math.NaN()), 3, 2}), 2, opstest.AttrInts("kernel_shape", 2), opstest.AttrInts("strides", 2))
	if err != nil || !math.IsNaN(float64(mp[0].Data.([]float32)[0])) || mp[0].Data.([]float32)[1] != 3 || !slices.Equal(mp[1].Data.([]int64), []int64{1, 2}) {
		t.Errorf("MaxPool with NaN: %v %v", mp, err)
	}
	big := make([]float32, 4099)
	for i := range big {
		big[i] = float32(i % 7)
	}
	ga, err := run(t, 22, "GlobalAveragePool", tensor.From([]int{1, 1, 4099}, big), 1)
	var sum float64
	for _, v := range big {
		sum += float64(v)
	}
	if err != nil || math.Abs(float64(ga[0].Data.([]float32)[0])-sum/4099) > 1e-6 {
		t.Errorf("GlobalAveragePool of 4099: %v %v, want %v", ga, err, sum/4099)
	}
}

// TestPoolRefusals: malformed attributes are refused at load, and inputs
// the node cannot take are input errors at run time; nothing panics.
func TestPoolRefusals(t *testing.T) {
	for _, c := range []struct {
		opset int64
		op    string
		attrs []*onnxpb.Attribute
		want  string
	}{
		{22, "MaxPool", nil, "needs kernel_shape"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 2), opstest.AttrInts("strides", 1)}, "strides has 1 values"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 0)}, "kernel_shape"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInts("pads", -1, 0)}, "pads"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrString("auto_pad", "SAME")}, "auto_pad"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrString("auto_pad", "VALID"), opstest.AttrInts("pads", 1, 1)}, "cannot be used with auto_pad"},
		{22, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInt("storage_order", 2)}, "storage_order"},
		{8, "MaxPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInts("dilations", 2)}, `"dilations" is defined from opset 10`},
		{18, "AveragePool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInts("dilations", 2)}, `"dilations" is defined from opset 19`},
		{22, "AveragePool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInt("storage_order", 1)}, `attribute "storage_order"`},
		{22, "LpPool", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2), opstest.AttrInt("p", 0)}, "p = 0"},
		{22, "GlobalLpPool", []*onnxpb.Attribute{opstest.AttrInt("p", -1)}, "p = -1"},
		{22, "MaxRoiPool", []*onnxpb.Attribute{opstest.AttrInts("pooled_shape", 2)}, "pooled_shape"},
		{22, "RoiAlign", []*onnxpb.Attribute{opstest.AttrString("mode", "median")}, "mode"},
		{22, "RoiAlign", []*onnxpb.Attribute{opstest.AttrString("coordinate_transformation_mode", "asymmetric")}, "coordinate_transformation_mode"},
		{15, "RoiAlign", []*onnxpb.Attribute{opstest.AttrString("coordinate_transformation_mode", "half_pixel")}, `unsupported: attribute "coordinate_transformation_mode"`},
	} {
		ins := 1
		switch c.op {
		case "MaxRoiPool":
			ins = 2
		case "RoiAlign":
			ins = 3
		}
		_, err := compile(c.opset, c.op, ins, 1, c.attrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s opset %d %v: error %v, want %q", c.op, c.opset, c.attrs, err, c.want)
		}
	}
	if _, err := compile(7, "MaxPool", 1, 2, opstest.AttrInts("kernel_shape", 2)); err == nil {
		t.Error("MaxPool-1 has no Indices output, yet loaded with two outputs")
	}
	run := func(op string, in *tensor.Tensor, attrs ...*onnxpb.Attribute) error {
		_, err := run(t, 22, op, in, 1, attrs...)
		return err
	}
	k2 := opstest.AttrInts("kernel_shape", 2, 2)
	for _, c := range []struct {
		op   string
		in   *tensor.Tensor
		want string
	}{
		{"MaxPool", tensor.From([]int{1, 4, 4}, make([]float32, 16)), "rank-4 input"},
		{"MaxPool", tensor.From([]int{1, 1, 1, 4}, make([]float32, 4)), "smaller than the window"},
		{"AveragePool", tensor.From([]int{1, 1, 2, 2}, []int8{1, 2, 3, 4}), "does not take INT8"},
	} {
		if err := run(c.op, c.in, k2); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an input error with %q", c.op, c.in.Shape, err, c.want)
		}
	}
	if err := run("MaxPool", tensor.From([]int{1, 1, 1, 4}, make([]float32, 4)), k2, opstest.AttrString("auto_pad", "VALID")); !errors.Is(err, ops.ErrInput) {
		t.Errorf("VALID window larger than the input: %v", err)
	}
}
