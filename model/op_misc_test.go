package model

import (
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// runOp compiles one node of op with the given attributes and outputs and
// runs it on in.
func runOp(t *testing.T, op string, opset int64, outputs int, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	d, err := lookup("", op, opset)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(in))
	outs := []string{"y", "z", "w"}[:outputs]
	n := &node{pb: &onnxpb.Node{OpType: op, Inputs: names, Outputs: outs}, attrs: Attrs{}, opset: opset, opts: &Options{Exec: gemm.Default()}, model: &Model{}}
	for _, a := range attrs {
		n.attrs[a.Name] = a
	}
	n.consts = make([]*tensor.Tensor, len(in))
	n.unused = make([]bool, len(in))
	_, compiled, err := compileNodeWith(d, n)
	if err != nil {
		return nil, err
	}
	return runAlone(n, compiled)(in)
}
