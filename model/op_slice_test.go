package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// One-node models for the tests of the indexing operators (op_index_test.go).

// idxModel encodes a one-node model whose inputs x0, x1, ... have the
// types of ins (nil: an absent optional input) and unknown shapes, with
// nOut outputs y0, y1, ... of type outType (Invalid: the first input's).
func idxModel(opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int, outType tensor.DataType) []byte {
	g := &onnxpb.Graph{Name: "op"}
	var names []string
	for i, t := range ins {
		if t == nil {
			names = append(names, "")
			continue
		}
		name := fmt.Sprintf("x%d", i)
		names = append(names, name)
		g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(t.DType)}})
	}
	if outType == tensor.Invalid {
		outType = ins[0].DType
	}
	var outs []string
	for j := 0; j < nOut; j++ {
		name := fmt.Sprintf("y%d", j)
		outs = append(outs, name)
		g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(outType)}})
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g})
}

// idxRunOp loads and runs a one-node model (see idxModel) and returns its
// outputs in order. Load errors fail the test.
func idxRunOp(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int) ([]*tensor.Tensor, error) {
	t.Helper()
	m, err := Load(idxModel(opset, op, attrs, ins, nOut, tensor.Invalid))
	if err != nil {
		t.Fatalf("%s: load: %v", op, err)
	}
	feed := map[string]*tensor.Tensor{}
	for i, x := range ins {
		if x != nil {
			feed[fmt.Sprintf("x%d", i)] = x
		}
	}
	res, err := m.Run(context.Background(), feed, nil)
	if err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, nOut)
	for j := range outs {
		outs[j] = res[fmt.Sprintf("y%d", j)]
	}
	return outs, nil
}

// idxRun1 is idxRunOp for a one-output operator that must succeed.
func idxRun1(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	outs, err := idxRunOp(t, opset, op, attrs, ins, 1)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return outs[0]
}

// idxWantInputError runs a one-node model and checks that it fails with an
// input error (HTTP 400) mentioning want.
func idxWantInputError(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int, want string) {
	t.Helper()
	_, err := idxRunOp(t, opset, op, attrs, ins, nOut)
	if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
}

func idxInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func idxInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func idxStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func idxI64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

// idxIota returns a float32 tensor of shape holding 0, 1, 2, ...
func idxIota(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i)
	}
	return tensor.From(shape, d)
}

func idxCheck(t *testing.T, what string, got *tensor.Tensor, shape []int, want any) {
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
