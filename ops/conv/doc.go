// Package conv holds the convolutions: Conv and ConvTranspose, the
// deformable DeformConv, the integer ConvInteger and QLinearConv, and
// quantserve's FusedConv, a Conv with a constant weight fused with the
// BatchNormalization, residual and activation after it (what the graph
// compiler's convolution rewrites make).
//
// A float convolution runs as an implicit GEMM on the same tiles as
// MatMul. The input image is laid out channels-last once; then, for a
// tile of output positions at a time, the tile's im2col rows (one per
// output position, K = kernel offsets × input channels of the group) are
// gathered into a scratch buffer reused for every tile, multiplied by the
// weights (a K×N matrix per group, N = output channels of the group) and
// written into the output. No buffer ever holds the whole image's im2col
// matrix: scratch is a tile, and the only whole-image buffer is the
// channels-last copy of the input, the input's own size.
//
// With a constant weight and quantization on (ops.Node.Quantize), the
// weights are quantized per output channel at load and the rows per row,
// on the int8 tiles; otherwise the float tiles run them. The int8 rows are
// built from the image itself (qgather_rows.go): with static activation
// parameters the image is quantized once and its bytes gathered; with
// per-row parameters each row's range comes from its taps' pixels' ranges
// (each pixel's measured once) and the row is quantized as it is read,
// bit for bit what quantizing the gathered floats gives. A depthwise convolution (one input channel per group) has direct
// loops of its own: plane by plane in NCHW, and, when its input or output
// is channels-last (a FusedConv between pointwise ones), each output row
// of pixels (in blocks of 16, the units cores share; a batch of two
// images a core by image) one call of the table's DepthwiseRows over a
// channels-last copy with its columns zero-padded, the rows of taps off
// the image not run (depthwise_nhwc.go). An image's first convolution (a few input
// channels, a few outputs) runs plane by plane too, by blocks of output
// rows: a block lays out the input rows it reads tap-ready, then each
// output plane's block is one DepthwiseRows call over them (planar.go). A convolution of one position
// per image is one product. A squeeze-and-excitation block's scaled
// convolution (FusedConv's channel scale) reading a channels-last image
// scales each pixel's channels instead of transposing (scale_nhwc.go). ConvTranspose is the adjoint of a convolution
// with the same weight layout: its rows are its input positions, the
// product's columns are (kernel offset, output channel) pairs, and the
// product is scattered back (col2im) into a channels-last accumulator.
// ConvInteger and QLinearConv run exactly on the int8 kernels.
//
// Tiles, planes and images are independent tasks, spread over the
// engine's threads with ops.Context.ParallelFor. Conv and ConvTranspose
// are exported for the gradient code, which reads a compiled
// convolution's geometry and held weight from its operator value
// (Convolution, Transposed) and runs the backward products with Forward,
// Adjoint and WeightGradient.
package conv
