package model

import (
	"context"

	_ "github.com/quantserve/quantserve/ops/all" // every operator family

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The registry lives in package ops; every operator registers there from
// its family's package under ops/.

// Descriptor describes one implementation of an ONNX operator over a
// range of opsets (see ops.Descriptor).
type Descriptor = ops.Descriptor

// MaxOpset is the newest ai.onnx opset this build implements.
const MaxOpset = ops.MaxOpset

// noAttrs is the attribute struct of operators that take none.
type noAttrs = ops.NoAttrs

// Descriptors returns every registered implementation of domain/typ
// ("" for ai.onnx), oldest opset first.
func Descriptors(domain, typ string) []*Descriptor { return ops.Descriptors(domain, typ) }

// Operators returns every registered descriptor, by domain, type and opset.
func Operators() []*Descriptor { return ops.Operators() }

func normDomain(d string) string { return ops.NormDomain(d) }

func lookup(domain, typ string, opset int64) (*Descriptor, error) {
	return ops.Lookup(domain, typ, opset)
}

// opFunc runs a compiled node. Inputs are never modified; an absent
// optional input is nil.
type opFunc func(in []*tensor.Tensor) ([]*tensor.Tensor, error)

// opsNode returns the registry's view of n; its Host is n.
func (n *node) opsNode() *ops.Node {
	on := &ops.Node{Name: n.name, Type: n.pb.OpType, Domain: normDomain(n.pb.Domain), Opset: n.opset,
		Attrs: n.attrs, Inputs: n.pb.Inputs, Outputs: n.pb.Outputs, Consts: n.consts, QDQ: n.qdq, Engine: n.opts.Exec,
		Quantize: n.opts.Quantize, Scheme: n.opts.Scheme, Subgraph: n.opsSubgraph, PartHost: n.partHost, Host: n}
	return on
}

// compileNodeWith parses and builds n with d: the parsed attributes and
// the operator.
func compileNodeWith(d *Descriptor, n *node) (any, ops.Operator, error) {
	on := n.opsNode()
	params, err := d.Parse(on)
	if err != nil {
		return nil, nil, err
	}
	op, err := d.Build(on, params)
	return params, op, err
}

// runAlone returns op as an opFunc running outside any request, on n's
// engine: for the operators a fused node keeps to run the parts it does
// not fuse.
func runAlone(n *node, op ops.Operator) opFunc {
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return op.Run(ops.NewContext(context.Background(), n.opts.Exec, false), in)
	}
}
