package model

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// lossOp compiles NegativeLogLikelihoodLoss (SoftmaxCrossEntropyLoss when
// sce), whose operators live in package ops/loss, at opset 13 for ins
// inputs and outs outputs, with its ignore_index (nil: none) and
// reduction: for the tests here that run it beside this package's
// operators.
func lossOp(t *testing.T, sce bool, ii *int64, reduction string, ins, outs int) opFunc {
	t.Helper()
	n := opstest.Node{Op: "NegativeLogLikelihoodLoss", Opset: 13, Outputs: outs,
		Attrs: []*onnxpb.Attribute{{Name: "reduction", Type: onnxpb.AttrString, S: []byte(reduction)}}}
	if sce {
		n.Op = "SoftmaxCrossEntropyLoss"
	}
	if ii != nil {
		n.Attrs = append(n.Attrs, &onnxpb.Attribute{Name: "ignore_index", Type: onnxpb.AttrInt, I: *ii})
	}
	op, _, err := opstest.Compile(n, ins)
	if err != nil {
		t.Fatal(err)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return op.Run(ops.NewContext(context.Background(), nil, false), in)
	}
}
