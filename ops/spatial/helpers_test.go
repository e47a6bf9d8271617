package spatial

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
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

// background is the Context of a run outside any request.
func background() *ops.Context { return ops.NewContext(context.Background(), nil, false) }

func ins(t ...*tensor.Tensor) []*tensor.Tensor { return t }

func attrStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func attrInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func attrInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func attrFloat(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

func attrFloats(name string, v ...float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloats, Floats: v}
}

func i64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

func f32s(shape []int, v ...float32) *tensor.Tensor { return tensor.From(shape, v) }

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
