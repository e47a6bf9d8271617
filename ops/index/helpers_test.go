package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// runOuts compiles and runs one node with outs outputs.
func runOuts(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, outs int) ([]*tensor.Tensor, error) {
	t.Helper()
	return opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs, Outputs: outs}, ins...)
}

// run1 runs a one-output operator that must succeed.
func run1(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	outs, err := runOuts(t, opset, op, attrs, ins, 1)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return outs[0]
}

// wantInputError runs a node and checks that it fails with an input
// error mentioning want.
func wantInputError(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, outs int, want string) {
	t.Helper()
	_, err := runOuts(t, opset, op, attrs, ins, outs)
	if err == nil || !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
}

func intAttr(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func strAttr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func i64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

// seq returns a float32 tensor of shape holding 0, 1, 2, ...
func seq(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i)
	}
	return tensor.From(shape, d)
}

func check(t *testing.T, what string, got *tensor.Tensor, shape []int, want any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, want %v", what, got.Data, want)
	}
}

func shapes(ts []*tensor.Tensor) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.DType.String()+tensor.ShapeString(t.Shape))
	}
	return s
}

// randTensor returns a tensor of rank 0 to 3 with dimensions 0 to 3:
// INT64 with extreme values, small INT32, BOOL or FP32.
func randTensor(r *rand.Rand) *tensor.Tensor {
	extremes := []int64{-1 << 63, 1<<63 - 1, -1 << 40, 1 << 40, -3, -1, 0, 1, 2, 3}
	shape := make([]int, r.IntN(4))
	for i := range shape {
		shape[i] = r.IntN(4)
	}
	n, _ := tensor.NumElements(shape)
	switch r.IntN(4) {
	case 0:
		d := make([]int64, n)
		for i := range d {
			d[i] = extremes[r.IntN(len(extremes))]
		}
		return tensor.From(shape, d)
	case 1:
		d := make([]int32, n)
		for i := range d {
			d[i] = int32(r.IntN(7) - 3)
		}
		return tensor.From(shape, d)
	case 2:
		d := make([]bool, n)
		for i := range d {
			d[i] = r.IntN(2) == 0
		}
		return tensor.From(shape, d)
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 3)
	}
	return tensor.From(shape, d)
}
