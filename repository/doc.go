// Package repository serves models from a directory laid out as Triton lays
// out a model repository:
//
//	<root>/<model>/config.yaml          optional, see Config
//	<root>/<model>/config.pbtxt         or Triton's, see ParseTritonConfig
//	<root>/<model>/<version>/model.onnx versions are positive integers
//
// or as KServe lays out one model: <root>/model.onnx, or root itself an
// .onnx file, served as version 1 (see Open).
//
// Every model is loaded at start-up; one that fails is recorded with its
// reason and does not stop the others. Lookups read an immutable snapshot,
// so they never block behind a load. Each loaded version counts its
// inferences (Stats) for Triton's statistics extension.
package repository
