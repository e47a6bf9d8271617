// Package tensor holds the ONNX operators that convert or make whole
// tensors: Cast and CastLike, between every type the Open Inference
// Protocol carries (strings included), BitCast, which reinterprets each
// element's bytes, and ConstantOfShape. CastTo and CastToContext, the
// conversion Cast runs (the latter under the request's deadline), and
// Fill serve the operators of other families.
//
// It holds the shape and slicing operators too, for every element type:
// Identity, Constant, Shape and Size; Reshape, Flatten, Squeeze and
// Unsqueeze, which share their input's data; Transpose, Concat, Slice,
// Split, Tile, Expand and Range, which copy whole contiguous runs
// through a Mover (MoverOf) and refuse outputs beyond tensor.MaxElements
// before allocating them. StridedView, Transpose and SliceView (the view
// Slice's gradient walks) serve other packages.
//
// Every operator that walks elements looks at the request's deadline at
// a bounded interval (at most ops.TickEvery elements between two looks)
// and stops with the request's error once it ends.
//
// Its files import the project's tensor package under its own name: the
// operators' package is imported elsewhere as tensorops.
package tensor
