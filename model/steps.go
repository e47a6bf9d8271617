package model

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// Step describes one compiled node for a backward pass.
type Step struct {
	Name, Op string
	Opset    int64
	Desc     *Descriptor // the implementation the node runs
	Params   any         // its parsed attribute struct (a pointer); graph attributes, compiled into Operator, are nil
	In       []int       // input slots as the graph names them; -1 when absent
	Out      []int
	// Exec is the engine the model runs on (Options.Exec): the one its
	// backward pass multiplies on.
	Exec *gemm.Engine
	// Operator is the compiled node: what its builder settled at load
	// (norm.BatchNorm tells whether it folded its constants;
	// matmul.WeightOf returns the weight a product's kernels hold, whose
	// slot in In has no value in a trace).
	Operator ops.Operator
}

// Steps returns the compiled nodes in execution order. Nodes folded at
// load (Constant, DequantizeLinear of constants) are not among them.
func (m *Model) Steps() []Step {
	out := make([]Step, len(m.steps))
	for i, st := range m.steps {
		out[i] = Step{Name: st.name, Op: st.desc.Type, Opset: st.opset, Desc: st.desc, Params: st.params, In: st.args, Out: st.out, Exec: m.exec, Operator: st.op}
	}
	return out
}

// Slot returns the value slot of a graph input, initializer or node output.
func (m *Model) Slot(name string) (int, bool) {
	s, ok := m.slotOf[name]
	return s, ok
}

// InputSlot returns the slot of graph input i; OutputSlot likewise.
func (m *Model) InputSlot(i int) int  { return m.inputSlot[i] }
func (m *Model) OutputSlot(i int) int { return m.outputSlot[i] }
