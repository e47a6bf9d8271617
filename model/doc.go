// Package model loads ONNX models and executes them.
//
// Load decodes a model.onnx file, checks every node against the operator set
// quantserve implements (refusing, with the node, op and opset named, what it
// cannot run), converts initializers to tensors and compiles the graph into a
// plan: a list of steps over numbered value slots. A *Model is immutable
// after Load and safe for concurrent Run calls.
package model
