//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// SoftmaxRowAVX2 forwards to kernels.SoftmaxRow in builds without assembly.
func SoftmaxRowAVX2(x []float32, scale float32) { kernels.SoftmaxRow(x, scale) }

// AddBiasAVX2 forwards to kernels.AddBias in builds without assembly.
func AddBiasAVX2(y, bias, res []float32) { kernels.AddBias(y, bias, res) }

// GeluAVX2 forwards to kernels.Gelu in builds without assembly.
func GeluAVX2(dst, src, bias []float32) { kernels.Gelu(dst, src, bias) }

// SigmoidAVX2 forwards to kernels.Sigmoid in builds without assembly.
func SigmoidAVX2(dst, src []float32) { kernels.Sigmoid(dst, src) }

// TanhAVX2 forwards to kernels.Tanh in builds without assembly.
func TanhAVX2(dst, src []float32) { kernels.Tanh(dst, src) }

// GeluTanhAVX2 forwards to kernels.GeluTanh in builds without assembly.
func GeluTanhAVX2(dst, src []float32) { kernels.GeluTanh(dst, src) }

// XSigmoidAVX2 forwards to kernels.XSigmoid in builds without assembly.
func XSigmoidAVX2(dst, src []float32, c *[kernels.ActRows][8]float32) { kernels.XSigmoid(dst, src, c) }
