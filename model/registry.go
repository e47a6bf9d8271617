package model

import (
	"context"

	_ "github.com/quantserve/quantserve/ops/all" // every operator family

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// The registry lives in package ops. The operators still in this package
// register through register, whose builders see the compiler's own node;
// each moves to its family's package under ops/ as an Operator value.

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

// opFunc runs a compiled node of this package. Inputs are never modified;
// an absent optional input is nil.
type opFunc func(in []*tensor.Tensor) ([]*tensor.Tensor, error)

// ctxFunc runs a compiled node that needs the request's context.
type ctxFunc func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Run calls f with c's context.
func (f ctxFunc) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return f(c.Context(), in)
}

// register adds an operator of this package to the registry: build
// compiles the compiler's node (the ops.Node's Host) into an opFunc, or
// sets the node's runCtx. It returns the registered descriptor.
func register[A any](d Descriptor, build func(n *node, a *A) (opFunc, error)) *Descriptor {
	return ops.Register(d, func(on *ops.Node, a *A) (ops.Operator, error) {
		n := on.Host.(*node)
		f, err := build(n, a)
		if err != nil {
			return nil, err
		}
		if n.runCtx != nil {
			return ctxFunc(n.runCtx), nil
		}
		return ops.Func(f), nil
	})
}

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
