// Package onnx holds what quantserve knows of the ONNX format below its
// operators: element types and tensors crossing between ONNX's protobuf
// messages (package onnxpb) and tensor.Tensor, and the error every layer
// uses for a feature of the format quantserve does not implement.
package onnx
