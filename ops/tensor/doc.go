// Package tensor holds the ONNX operators that convert or make whole
// tensors: Cast and CastLike, between every type the Open Inference
// Protocol carries (strings included), and ConstantOfShape. CastTo, the
// conversion Cast runs, and Fill serve the operators of other families.
//
// Its files import the project's tensor package under its own name: the
// operators' package is imported elsewhere as tensorops.
package tensor
