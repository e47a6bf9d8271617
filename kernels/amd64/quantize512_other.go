//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// QuantizeU8AVX512 forwards to kernels.QuantizeU8 in builds without
// assembly.
func QuantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8) {
	kernels.QuantizeU8(x, inv, zp, u)
}

// MinMaxAVX512 forwards to kernels.MinMax in builds without assembly.
func MinMaxAVX512(x []float32) (lo, hi float32, finite bool) { return kernels.MinMax(x) }

// QuantizeDivU8AVX512 forwards to kernels.QuantizeDivU8 in builds without
// assembly.
func QuantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8) {
	kernels.QuantizeDivU8(x, scale, zp, u)
}
