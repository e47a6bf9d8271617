// Package index holds the ONNX operators that address elements by index:
// Gather, GatherElements and GatherND, which read the elements their
// indices name; Scatter, ScatterElements, ScatterND and TensorScatter,
// which write (or combine) updates there; Compress and NonZero, which
// select by a condition; OneHot, EyeLike and Trilu, which place values
// by position; TopK and Unique, which order; Hardmax, which marks the
// largest entry along an axis; CumSum and CumProd, the running sums and
// products along an axis; and ReverseSequence.
//
// Indices are INT32 or INT64 and may count from the end (-1 is the last
// entry); an index out of range, like an output beyond
// tensor.MaxElements (NewTensor refuses it before allocating), is an
// input error. Every element type moves through tensorops.Mover; long
// loops look at the request's deadline at a bounded interval.
package index
