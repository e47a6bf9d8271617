package model

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// layerNormOp and rmsNormOp compile LayerNormalization (3 inputs, 3
// outputs) and RMSNormalization, whose operators live in package
// ops/norm, with the given axis: for the tests here that run them beside
// this package's operators.
func layerNormOp(t *testing.T, axis int64) opFunc {
	t.Helper()
	return normOp(t, opstest.Node{Op: "LayerNormalization", Opset: 17, Outputs: 3,
		Attrs: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: axis}}}, 3)
}

func rmsNormOp(t *testing.T, axis int64) opFunc {
	t.Helper()
	return normOp(t, opstest.Node{Op: "RMSNormalization", Opset: 23,
		Attrs: []*onnxpb.Attribute{{Name: "axis", Type: onnxpb.AttrInt, I: axis}}}, 2)
}

func normOp(t *testing.T, n opstest.Node, ins int) opFunc {
	t.Helper()
	op, _, err := opstest.Compile(n, ins)
	if err != nil {
		t.Fatal(err)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return op.Run(ops.NewContext(context.Background(), nil, false), in)
	}
}
