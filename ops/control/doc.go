// Package control holds the ONNX control-flow operators: If, Loop and Scan
// (opset 8's batched Scan and opset 9's). Their attributes are graphs,
// compiled once at load by the graph compiler (ops.Node.Graph) in a scope
// nested in the node's graph; a run passes them the node's inputs, which
// carry the values they read of the graphs around them. Loop and Scan
// check the request's deadline on every iteration.
package control
