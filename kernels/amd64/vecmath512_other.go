//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// SoftmaxRowAVX512 forwards to kernels.SoftmaxRow in builds without
// assembly.
func SoftmaxRowAVX512(x []float32, scale float32) { kernels.SoftmaxRow(x, scale) }

// AddBiasAVX512 forwards to kernels.AddBias in builds without assembly.
func AddBiasAVX512(y, bias, res []float32) { kernels.AddBias(y, bias, res) }

// GeluAVX512 forwards to kernels.Gelu in builds without assembly.
func GeluAVX512(dst, src, bias []float32) { kernels.Gelu(dst, src, bias) }

// SigmoidAVX512 forwards to kernels.Sigmoid in builds without assembly.
func SigmoidAVX512(dst, src []float32) { kernels.Sigmoid(dst, src) }

// TanhAVX512 forwards to kernels.Tanh in builds without assembly.
func TanhAVX512(dst, src []float32) { kernels.Tanh(dst, src) }

// GeluTanhAVX512 forwards to kernels.GeluTanh in builds without assembly.
func GeluTanhAVX512(dst, src []float32) { kernels.GeluTanh(dst, src) }

// XSigmoidAVX512 forwards to kernels.XSigmoid in builds without assembly.
func XSigmoidAVX512(dst, src []float32, c *[kernels.ActRows][8]float32) {
	kernels.XSigmoid(dst, src, c)
}
