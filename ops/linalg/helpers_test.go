package linalg

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

// run1 runs a one-output operator that must succeed.
func run1(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	outs, err := opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs}, ins...)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return outs[0]
}

// wantInputError runs a node and checks that it fails with an input
// error mentioning want.
func wantInputError(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, want string) {
	t.Helper()
	_, err := opstest.Run(t, opstest.Node{Op: op, Opset: opset, Attrs: attrs}, ins...)
	if err == nil || !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
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

func randF64(r *rand.Rand, shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float64, n)
	for i := range d {
		d[i] = r.NormFloat64()
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
