//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// SoftmaxRowNEON forwards to kernels.SoftmaxRow in builds without
// assembly.
func SoftmaxRowNEON(x []float32, scale float32) { kernels.SoftmaxRow(x, scale) }

// AddBiasNEON forwards to kernels.AddBias in builds without assembly.
func AddBiasNEON(y, bias, res []float32) { kernels.AddBias(y, bias, res) }

// GeluNEON forwards to kernels.Gelu in builds without assembly.
func GeluNEON(dst, src, bias []float32) { kernels.Gelu(dst, src, bias) }

// SigmoidNEON forwards to kernels.Sigmoid in builds without assembly.
func SigmoidNEON(dst, src []float32) { kernels.Sigmoid(dst, src) }

// TanhNEON forwards to kernels.Tanh in builds without assembly.
func TanhNEON(dst, src []float32) { kernels.Tanh(dst, src) }

// GeluTanhNEON forwards to kernels.GeluTanh in builds without assembly.
func GeluTanhNEON(dst, src []float32) { kernels.GeluTanh(dst, src) }

// ColumnPoolSumsNEON forwards to kernels.ColumnPoolSums in builds
// without assembly.
func ColumnPoolSumsNEON(dst []float64, x []float32, rows, ld int) {
	kernels.ColumnPoolSums(dst, x, rows, ld)
}

// XSigmoidNEON forwards to kernels.XSigmoid in builds without assembly.
func XSigmoidNEON(dst, src []float32, c *[kernels.ActRows][8]float32) { kernels.XSigmoid(dst, src, c) }
