package model

import "github.com/quantserve/quantserve/dispatch"

// kernelTable returns the kernel table of the engine n runs on: its
// Options.Exec, which LoadWith and Compile always set.
func kernelTable(n *node) *dispatch.Table { return n.opts.Exec.Table() }
