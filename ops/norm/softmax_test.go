package norm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// softmaxDefinition is softmax (or its log) of x viewed as [outer, dim,
// inner] along dim, in float64 as the spec states it.
func softmaxDefinition(x []float64, outer, dim, inner int, log bool) []float64 {
	y := make([]float64, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			var sum float64
			for i := 0; i < dim; i++ {
				sum += math.Exp(x[(o*dim+i)*inner+j])
			}
			for i := 0; i < dim; i++ {
				k := (o*dim+i)*inner + j
				if log {
					y[k] = x[k] - math.Log(sum)
				} else {
					y[k] = math.Exp(x[k]) / sum
				}
			}
		}
	}
	return y
}

// TestSoftmax checks Softmax and LogSoftmax from opset 13 (along one
// axis) and before (over the flattened trailing block) against their
// definitions, in float32 and float64.
func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 16))
	x := opstest.Normal(r, 2, 3, 4)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, c := range []struct {
			opset             int64
			axis              int64
			outer, dim, inner int
		}{
			{13, 1, 2, 3, 4},
			{13, -1, 6, 4, 1},
			{13, 0, 1, 2, 12},
			{11, 1, 2, 12, 1},
			{11, 0, 1, 24, 1},
			{11, -1, 6, 4, 1},
		} {
			want := softmaxDefinition(x.Float64s(), c.outer, c.dim, c.inner, op == "LogSoftmax")
			for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64} {
				res, err := run(t, c.opset, op, 1, []*tensor.Tensor{castTo(x, dt)}, opstest.AttrInt("axis", c.axis))
				if err != nil {
					t.Fatal(err)
				}
				if res[0].DType != dt || !ops.EqualShape(res[0].Shape, x.Shape) {
					t.Fatalf("%s-%d %v: output %v %v", op, c.opset, dt, res[0].DType, res[0].Shape)
				}
				opstest.Close(t, op, res[0].Float64s(), want, 1e-5)
			}
		}
	}
	// The default axis: the last from opset 13, 1 before.
	d13, _ := run(t, 13, "Softmax", 1, []*tensor.Tensor{x})
	opstest.Close(t, "Softmax-13 default axis", d13[0].Float64s(), softmaxDefinition(x.Float64s(), 6, 4, 1, false), 1e-6)
	d11, _ := run(t, 11, "Softmax", 1, []*tensor.Tensor{x})
	opstest.Close(t, "Softmax-11 default axis", d11[0].Float64s(), softmaxDefinition(x.Float64s(), 2, 12, 1, false), 1e-6)

	for _, c := range []struct {
		x     *tensor.Tensor
		attrs []*onnxpb.Attribute
		want  string
	}{
		{tensor.Scalar(float32(1)), nil, "rank >= 1"},
		{x, []*onnxpb.Attribute{opstest.AttrInt("axis", 3)}, "out of range"},
		{tensor.From([]int{2}, []int64{1, 2}), nil, "Softmax does not take"},
	} {
		if _, err := run(t, 13, "Softmax", 1, []*tensor.Tensor{c.x}, c.attrs...); !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want an input error with %q", c.x.Shape, c.attrs, err, c.want)
		}
	}
	if _, err := compile(13, "Softmax", 2, 1); err == nil {
		t.Error("Softmax of two inputs accepted")
	}
}
