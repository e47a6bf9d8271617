// Package amd64 holds quantserve's amd64 assembly kernels: AVX2 (+FMA)
// integer and float tiles, the AVX-VNNI (VEX ymm vpdpbusd) integer tile,
// the AVX-512 VNNI (zmm vpdpbusd) integer tile and the AVX-512 float tile
// (vnni_amd64.s, written by _gen), the vector math of the transformer
// paths (GELU, softmax, bias) in AVX2 (vecmath_amd64.s) and AVX-512
// (vecmath512_amd64.s), the AVX2 kernels of the convolution and pooling
// paths (conv_amd64.s, hand-written) and AVX-512 twins of its output
// stage and HardSigmoid family (conv512_amd64.s), LeakyRelu and the bound of a Max
// or Min with a constant in AVX2 and AVX-512 and the maximum of two rows
// in AVX2 (leaky_amd64.s, hand-written), the channels-last depthwise rows
// in AVX2 (depthwise_amd64.s) and AVX-512 (depthwise512_amd64.s) and
// their twins for grids of taps over adjacent pixels in both
// (depthwise_grid_amd64.s, written by _gendw), all the same bits, a quantize-dequantize pair and its table look-up
// (fakequant_amd64.s) and a layer normalization's sums and normalization
// (layernorm_amd64.s), in AVX2, and a row's quantization to bytes in
// AVX-512 (quantize512_amd64.s; its AVX2 twin is in kernels_amd64.s).
// Each is the twin of a pure-Go reference in package
// kernels and is tested against it on every CPU that has its features.
// Package dispatch calls a kernel only on CPUs (and OSes, through XCR0)
// that provide what it needs.
//
// In builds for other architectures, or with the purego tag, Available is
// false and the functions forward to the references.
package amd64
