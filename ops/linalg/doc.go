// Package linalg holds the ONNX linear-algebra operators that are not
// plain matrix products: Det, the determinants of square matrices (by LU
// decomposition with partial pivoting, in float64), and Einsum, which
// lowers its equation to batched matrix products on the engine the model
// runs on (float32 on the float kernels; other types on a reference loop)
// and takes a strided walk over every label where operands broadcast.
package linalg
