package pool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// randTensor returns a tensor of shape with values in [-4, 4), a few of
// them NaN, in dt (float32 or float64).
func randTensor(r *rand.Rand, dt tensor.DataType, shape ...int) *tensor.Tensor {
	f := make([]float32, ops.ProdInts(shape))
	for i := range f {
		f[i] = float32(r.Float64()*8 - 4)
		if r.IntN(997) == 0 {
			f[i] = float32(math.NaN())
		}
	}
	if dt == tensor.Float64 {
		d := make([]float64, len(f))
		for i, v := range f {
			d[i] = float64(v)
		}
		return tensor.From(shape, d)
	}
	return tensor.From(shape, f)
}

// TestSplitMatchesSerial: every pool split across two cores gives the
// bits of one core, on odd sizes whose chunks end mid-plane and mid-row.
func TestSplitMatchesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	k3, s2 := opstest.AttrInts("kernel_shape", 3, 3), opstest.AttrInts("strides", 2, 2)
	pads := opstest.AttrInts("pads", 1, 0, 1, 1)
	x := randTensor(r, tensor.Float32, 3, 7, 67, 45)
	x64 := randTensor(r, tensor.Float64, 3, 7, 67, 45)
	x3 := randTensor(r, tensor.Float32, 2, 5, 9, 31, 13)
	big := randTensor(r, tensor.Float32, 1, 1, 403, 397) // one plane: the split is over its rows
	g, g64 := randTensor(r, tensor.Float32, 3, 41, 97, 101), randTensor(r, tensor.Float64, 3, 17, 97, 101)
	for _, tc := range []struct {
		op    string
		outs  int
		in    *tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"MaxPool", 1, x, []*onnxpb.Attribute{k3, s2, pads}},
		{"MaxPool", 1, big, []*onnxpb.Attribute{k3}},
		{"MaxPool", 2, x, []*onnxpb.Attribute{k3, s2, pads}},
		{"MaxPool", 1, x64, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 3), opstest.AttrInt("ceil_mode", 1), s2}},
		{"MaxPool", 1, x3, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 3, 2)}},
		{"AveragePool", 1, x, []*onnxpb.Attribute{k3, s2, pads}},
		{"AveragePool", 1, big, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 5, 4), opstest.AttrInt("count_include_pad", 1), opstest.AttrInts("pads", 2, 2, 2, 2)}},
		{"AveragePool", 1, x64, []*onnxpb.Attribute{k3, pads, opstest.AttrInt("count_include_pad", 1)}},
		{"AveragePool", 1, x3, []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 3, 3, 3), opstest.AttrInts("pads", 1, 1, 1, 1, 1, 1)}},
		{"LpPool", 1, x, []*onnxpb.Attribute{k3, pads}},
		{"LpPool", 1, x, []*onnxpb.Attribute{k3, opstest.AttrInt("p", 3)}},
		{"GlobalAveragePool", 1, g, nil},
		{"GlobalAveragePool", 1, g64, nil},
		{"GlobalMaxPool", 1, g64, nil},
		{"GlobalLpPool", 1, g, nil},
	} {
		op, err := compile(22, tc.op, 1, tc.outs, tc.attrs...)
		if err != nil {
			t.Fatal(err)
		}
		opstest.SplitRun(t, fmt.Sprintf("%s %v on %v %v", tc.op, tc.attrs, tc.in.DType, tc.in.Shape), op, tc.in)
	}
}
