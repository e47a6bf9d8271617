// Package opstest compiles and runs single operators for the tests of the
// operator families under ops/, as the graph compiler would: the
// descriptor the registry holds for the opset, the node's attributes
// parsed, the operator built and run under a Context on the default
// engine. It also holds what those tests share to build nodes and
// inputs (attributes, small tensors) and to check outputs.
package opstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Node describes one node to compile: its operator (Domain "" for
// ai.onnx), opset, attributes, how many outputs it has, and the inputs
// known at load (nil entries are run-time inputs; a shorter list leaves
// the rest at run time).
type Node struct {
	Domain  string
	Op      string
	Opset   int64
	Attrs   []*onnxpb.Attribute
	Outputs int
	Consts  []*tensor.Tensor
	// Absent lists the inputs compiled with an empty name: ONNX's mark
	// of an optional input left out.
	Absent []int
	// Subgraph compiles the node's graph attributes, standing in for the
	// graph compiler (nil: the node has none).
	Subgraph func(g *onnxpb.Graph) (ops.Graph, error)
}

// Compile builds n with the registry's descriptor for its opset, for
// inputs inputs.
func Compile(n Node, inputs int) (ops.Operator, any, error) {
	d, err := ops.Lookup(n.Domain, n.Op, n.Opset)
	if err != nil {
		return nil, nil, err
	}
	on := &ops.Node{Name: n.Op, Type: n.Op, Domain: ops.NormDomain(n.Domain), Opset: n.Opset,
		Attrs: map[string]*onnxpb.Attribute{}, Engine: gemm.Default(), Subgraph: n.Subgraph}
	for _, a := range n.Attrs {
		on.Attrs[a.Name] = a
	}
	for i := range inputs {
		name := fmt.Sprintf("in%d", i)
		if slices.Contains(n.Absent, i) {
			name = ""
		}
		on.Inputs = append(on.Inputs, name)
	}
	outs := max(n.Outputs, 1)
	for i := range outs {
		on.Outputs = append(on.Outputs, fmt.Sprintf("out%d", i))
	}
	on.Consts = make([]*tensor.Tensor, inputs)
	copy(on.Consts, n.Consts)
	params, err := d.Parse(on)
	if err != nil {
		return nil, nil, err
	}
	op, err := d.Build(on, params)
	return op, params, err
}

// Background is the Context of a run outside any request, on the
// default engine.
func Background() *ops.Context { return ops.NewContext(context.Background(), gemm.Default(), false) }

// Run compiles n for len(in) inputs and runs it on in.
func Run(t testing.TB, n Node, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	op, _, err := Compile(n, len(in))
	if err != nil {
		return nil, err
	}
	return op.Run(Background(), in)
}

// Run1 runs n on in, failing the test unless it succeeds, and returns
// its first output.
func Run1(t testing.TB, n Node, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	out, err := Run(t, n, in...)
	if err != nil {
		t.Fatalf("%s: %v", n.Op, err)
	}
	return out[0]
}

// WantInputError runs n on in and fails the test unless that fails with
// an input error (ops.ErrInput) mentioning want.
func WantInputError(t testing.TB, n Node, want string, in ...*tensor.Tensor) {
	t.Helper()
	_, err := Run(t, n, in...)
	if err == nil || !errors.Is(err, ops.ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", n.Op, err, want)
	}
}
