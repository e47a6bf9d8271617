package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// Graph is a compiled graph attribute of a node: If's branches, Loop's and
// Scan's bodies. The graph compiler compiles it once, at load, in a scope
// nested in the node's graph, so names the graph does not define read
// values of the graphs around it (its captures). The compiler passes the
// captured values to the node's operator after the node's own inputs, and
// the graph reads them there.
type Graph interface {
	// Inputs and Outputs name the graph's inputs and outputs, in order.
	// Callers must not modify them.
	Inputs() []string
	Outputs() []string
	// Run runs the graph under c on inputs, one value per graph input,
	// and returns its outputs. in is the operator's full input list, which
	// carries the captured values.
	Run(c *Context, in []*tensor.Tensor, inputs []*tensor.Tensor) ([]*tensor.Tensor, error)
}
