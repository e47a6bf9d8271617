package model

import (
	"context"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// reductionOps are the reductions of package ops/reduce.
var reductionOps = []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
	"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}

// reductionOp compiles the reduction op at opset 18 (axes an optional
// second input) with its keepdims and noop_with_empty_axes: for the tests
// here that run it beside this package's operators.
func reductionOp(t *testing.T, op string, keep, noop bool) opFunc {
	t.Helper()
	flag := func(name string, v bool) *onnxpb.Attribute {
		a := &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt}
		if v {
			a.I = 1
		}
		return a
	}
	o, _, err := opstest.Compile(opstest.Node{Op: op, Opset: 18,
		Attrs: []*onnxpb.Attribute{flag("keepdims", keep), flag("noop_with_empty_axes", noop)}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return o.Run(ops.NewContext(context.Background(), nil, false), in)
	}
}
