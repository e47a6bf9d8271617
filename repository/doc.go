// Package repository serves models from a directory laid out as Triton lays
// out a model repository:
//
//	<root>/<model>/config.yaml          optional, see Config
//	<root>/<model>/<version>/model.onnx versions are positive integers
//
// Every model is loaded at start-up; one that fails is recorded with its
// reason and does not stop the others. Lookups read an immutable snapshot,
// so they never block behind a load.
package repository
