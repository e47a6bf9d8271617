package spatial

import (
	"fmt"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// run compiles one node of op at opset with attrs for the inputs in (nil
// for an absent optional input) and runs it on them: its output.
func run(t testing.TB, opset int64, op string, in []*tensor.Tensor, attrs ...*onnxpb.Attribute) (*tensor.Tensor, error) {
	t.Helper()
	out, err := opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs}, in...)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// compile compiles one node of op at opset with attrs and inputs inputs.
func compile(opset int64, op string, inputs int, attrs ...*onnxpb.Attribute) error {
	_, _, err := opstest.Compile(opstest.Node{Op: op, Opset: opset, Attrs: attrs}, inputs)
	return err
}

func ins(t ...*tensor.Tensor) []*tensor.Tensor { return t }

// seq is the float32 tensor of shape holding 1, 2, 3, ...
func seq(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i + 1)
	}
	return tensor.From(shape, d)
}

func check(t *testing.T, got *tensor.Tensor, err error, shape []int, want any) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("shape %v, want %v", got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got.Data, want)
	}
}
