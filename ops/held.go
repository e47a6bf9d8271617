package ops

// InputHolder is implemented by a graph compiler's record of a node
// (Node.Host) that can stop feeding inputs the compiled operator holds
// itself.
type InputHolder interface {
	HoldInputs(i ...int)
}

// HoldInputs tells the graph compiler that the operator being built holds
// what it needs of inputs i (constants it folded at load) and does not
// read them at run time: the compiler need not feed them, and may free
// them. Without a compiler that listens (Host nil) it does nothing.
func (n *Node) HoldInputs(i ...int) {
	if h, ok := n.Host.(InputHolder); ok {
		h.HoldInputs(i...)
	}
}
