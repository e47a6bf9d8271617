package model

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
)

// ErrInput marks errors caused by the inputs of a Run call (wrong names,
// types or shapes, or shapes the graph cannot take). Callers map it to a
// client error.
var ErrInput = ops.ErrInput

// ErrUnsupported marks a load error for an operator, attribute or data type
// quantserve does not implement.
var ErrUnsupported = ops.ErrUnsupported

// InputError describes a problem with one Run input.
type InputError struct {
	Name string
	Msg  string
}

func (e *InputError) Error() string {
	if e.Name == "" {
		return e.Msg
	}
	return fmt.Sprintf("input %q: %s", e.Name, e.Msg)
}

func (e *InputError) Unwrap() error { return ErrInput }

// NodeError is an error raised by one node, at load or at run time.
type NodeError struct {
	Node  string // node name, or "#index" when the node has none
	Op    string
	Opset int64
	Err   error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("node %s (%s, opset %d): %v", e.Node, e.Op, e.Opset, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

func unsupportedf(format string, args ...any) error { return ops.Unsupportedf(format, args...) }

// inputErrorf returns an error wrapping ErrInput: the inputs given to Run
// cannot flow through an op.
func inputErrorf(format string, args ...any) error { return ops.InputErrorf(format, args...) }
