// Package arm64 holds quantserve's NEON assembly kernels: quantized tiles
// with widening multiplies (SMULL/SADALP) or, where the CPU reports
// dotprod, SDOT; float tiles with FMLA; row quantization with FCVTNS;
// LeakyRelu, the bound of a Max or Min with a constant and the maximum of
// two rows (leaky_arm64.s); softmax's passes, GELU and the bias addition
// (vecmath_arm64.s); the convolution epilogues, row scaling and depthwise
// taps (conv_arm64.s); the channels-last depthwise rows
// (depthwise_arm64.s); a quantize-dequantize pair and its table look-up
// (fakequant_arm64.s); and a layer normalization's sums and normalization
// (layernorm_arm64.s),
// with the float instructions Go's assembler lacks encoded in
// neon_arm64.h.
// Each is the twin of a pure-Go reference in package kernels, tested
// against it (on amd64 machines under qemu-aarch64). Package dispatch calls
// them only on CPUs with the features they need.
//
// The quantized tiles work on s = u XOR 0x80 = u - 128, a signed byte, so
// they return Σ (u-128)·b; QOffset is the 128 to add back through the
// weights' column sums.
//
// In builds for other architectures, or with the purego tag, Available is
// false and the functions forward to the references.
package arm64

// QOffset is the activation offset the quantized tiles subtract.
const QOffset = 128
