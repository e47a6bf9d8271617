// Package ops is the kit every ONNX operator of quantserve is built with:
// the registry that maps a descriptor (domain, op type, opset range) to
// its builder, the Node a builder reads at load, the Operator value it
// returns, and the Context an operator runs with.
//
// An operator is a value that owns its compiled state: its builder parses
// the node's attributes (into a typed struct, once) and packs its constant
// weights, and Run reads only its inputs and the Context. The graph
// compiler (package model) looks every node up here, builds it, plans the
// graph's memory and runs the operators in order.
//
// Adding an operator is one file in its family's package (ops/...,
// registered from an init function) and its test. Everything an operator
// needs from below comes through the Context: the engine the server
// chose with --kernels and --threads and the request's deadline.
package ops
