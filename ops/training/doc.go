// Package training holds the optimizer steps of the ONNX domain
// ai.onnx.preview.training (Adagrad, Adam, Momentum): one deterministic
// update of a list of tensors from their gradients and optimizer state,
// as a training graph exported to ONNX runs them.
package training
