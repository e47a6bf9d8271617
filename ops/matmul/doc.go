// Package matmul holds the matrix products and the quantization operators
// around them: MatMul and Gemm; QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear; MatMulInteger and QLinearMatMul, the integer
// products of ONNX Runtime's quantization tools; and quantserve's own
// Linear, a MatMul by a constant weight fused with the bias, activation
// and residual that follow it (what the graph compiler's "linear"
// rewrite makes), and DynamicLinear, ONNX Runtime's exported dynamic
// quantization (DynamicQuantizeLinear, MatMulInteger, Cast and the scale
// Muls, then bias, Gelu and residual) run as one product on the int8
// kernels with the unfused graph's exact bits (the "dynamic" rewrite).
//
// A product by a constant 2-D float32 weight is a Linear (NewLinear): the
// weight packed once, at load, for the float kernels, or quantized for
// the int8 kernels when the model is loaded with quantization and the
// weight holds at least ops.MinQuantizedWeights values. Integer weights a
// QDQ model stores behind a DequantizeLinear (ops.QDQWeight) run on the
// int8 kernels as they are. Linear is exported for the operators of
// other families that multiply by a constant weight; the gradient code
// keys on MatMul and Gemm and reaches the weight of a compiled product
// through WeightOf.
//
// The loops outside the engine's kernels (the products of other types
// than float32, the zero points and requantization of the integer
// products, the quantization operators) look at the request's deadline
// at most ops.TickEvery units of work apart, and every engine call is
// counted before it runs.
package matmul
