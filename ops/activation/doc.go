// Package activation holds the ONNX activation functions: Relu,
// LeakyRelu, PRelu and ThresholdedRelu; Sigmoid, HardSigmoid, Tanh,
// HardSwish and Swish; Elu, Selu and Celu; Softplus, Softsign and Mish;
// Gelu; Shrink; Clip; and Dropout, which inference runs as the identity.
//
// The opset 1 versions of Relu, LeakyRelu, Sigmoid, Tanh, Elu, Selu,
// HardSigmoid and Clip differ from opset 6 only by the legacy
// consumed_inputs attribute, which is refused when present (as every
// attribute an attributes struct does not name); later versions widened
// the types.
//
// float32 tensors run on float32 kernels (Sigmoid, Tanh, Swish and both
// forms of Gelu on the engine's vector kernels, within a few ulps); every
// other
// floating-point type computes in float64 and rounds once. The gradient
// code reads the attribute structs (LeakyReluAttrs, GeluAttrs, ...) the
// operators parse.
package activation
