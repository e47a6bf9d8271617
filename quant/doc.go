// Package quant defines quantserve's int8 quantization schemes and
// quantized tensors.
//
// Weights are quantized symmetrically to int8 in [-127, 127] with round half
// to even, q = round(x / s), per tensor (one s), per output channel (one s
// per column of a K×N weight) or per block (one s per 32 consecutive values
// along K of each column, like ggml's Q8_0), where s = max|x| / 127 over
// the group. Dequantization is x' = q·s, and for every finite x,
//
//	|x - x'| <= s/2
//
// A group whose largest magnitude is below MinScaleRange (2^-120,
// subnormals included) quantizes to zeros with s = 0. NaN or ±Inf in a
// weight is an error.
//
// Activations are quantized per row at run time (RowParams) to
// u = round(x/s) + zp in [0, 127] with s = (hi - lo)/127 over the row's
// range widened to hold 0, and zp where 0 falls (0 for rows with no
// negative value). Bytes of at most 127 keep every u8×s8 product pair
// inside 16 bits, which is what lets the AVX2 kernel be exact; post-ReLU
// activations lose nothing against int8.
package quant
