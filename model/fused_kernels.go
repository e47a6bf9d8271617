package model

import "github.com/quantserve/quantserve/dispatch"

// kernelTable returns the kernel table n's products run on (the default
// table for nodes compiled without an engine).
func kernelTable(n *node) *dispatch.Table {
	if n.opts == nil || n.opts.Exec == nil {
		return dispatch.Default()
	}
	return n.opts.Exec.Table()
}
