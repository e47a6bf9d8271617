package norm

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestNormTypes runs every normalization over FP64, FP16 and BF16: the
// float32 result in that type.
func TestNormTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	x := opstest.Normal(r, 2, 4, 3)
	scale4, bias4 := opstest.Normal(r, 4), opstest.Normal(r, 4)
	scale2, bias2 := opstest.Normal(r, 2), opstest.Normal(r, 2)
	for _, c := range []struct {
		opset  int64
		op     string
		params []*tensor.Tensor
		attrs  []*onnxpb.Attribute
	}{
		{15, "BatchNormalization", []*tensor.Tensor{scale4, bias4, opstest.Normal(r, 4), tensor.From([]int{4}, positive(r, 4))}, nil},
		{22, "InstanceNormalization", []*tensor.Tensor{scale4, bias4}, nil},
		{21, "GroupNormalization", []*tensor.Tensor{scale4, bias4}, []*onnxpb.Attribute{opstest.AttrInt("num_groups", 2)}},
		{18, "GroupNormalization", []*tensor.Tensor{scale2, bias2}, []*onnxpb.Attribute{opstest.AttrInt("num_groups", 2)}},
		{13, "LRN", nil, []*onnxpb.Attribute{opstest.AttrInt("size", 3)}},
		{13, "MeanVarianceNormalization", nil, []*onnxpb.Attribute{opstest.AttrInts("axes", 0, 2)}},
		{22, "LpNormalization", nil, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
		{13, "Softmax", nil, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
		{13, "LogSoftmax", nil, []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
	} {
		var want []float64
		for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16} {
			in := []*tensor.Tensor{castTo(x, dt)}
			for _, p := range c.params {
				in = append(in, castTo(p, dt))
			}
			res, err := run(t, c.opset, c.op, 1, in, c.attrs...)
			if err != nil {
				t.Fatalf("%s %v: %v", c.op, dt, err)
			}
			y := res[0]
			if y.DType != dt || !ops.EqualShape(y.Shape, x.Shape) {
				t.Fatalf("%s %v: output %v %v", c.op, dt, y.DType, y.Shape)
			}
			if dt == tensor.Float32 {
				want = y.Float64s()
				continue
			}
			// Half inputs are rounded before the op and its result after:
			// a few units of the type's precision.
			tol := map[tensor.DataType]float64{tensor.Float64: 1e-5, tensor.Float16: 1e-2, tensor.BFloat16: 6e-2}[dt]
			for i, g := range y.Float64s() {
				if math.Abs(g-want[i]) > tol*(1+math.Abs(want[i])) {
					t.Fatalf("%s %v: element %d = %v, float32 gives %v", c.op, dt, i, g, want[i])
				}
			}
		}
		in := []*tensor.Tensor{tensor.From([]int{2, 4, 3}, make([]int32, 24))}
		in = append(in, c.params...)
		if _, err := run(t, c.opset, c.op, 1, in, c.attrs...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s over INT32: %v, want an input error", c.op, err)
		}
	}
}
