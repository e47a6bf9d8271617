//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// maxScaledAVX512 returns the largest float32(scale·x[j]), NaN ignored,
// -Inf when there is none. Requires AVX-512 F; len(x) a positive multiple
// of 8.
//
//go:noescape
func maxScaledAVX512(x []float32, scale float32, c *[kernels.VecRows][8]float32) float32

// expSumAVX512 computes kernels.ExpSumLanes(x, scale, m). Requires
// AVX-512 F; len(x) a positive multiple of 8.
//
//go:noescape
func expSumAVX512(x []float32, scale, m float32, c *[kernels.VecRows][8]float32) float32

// scaleAVX512 computes kernels.ScaleRow(x, s), the values after the last
// whole 16 under a mask. Requires AVX-512 F.
//
//go:noescape
func scaleAVX512(x []float32, s float32)

// addBiasAVX512 computes kernels.AddBias(y, bias, res) (res empty for
// nil), the values after the last whole 16 under a mask. Requires AVX-512
// F; len(bias) >= len(y), len(res) 0 or >= len(y).
//
//go:noescape
func addBiasAVX512(y, bias, res []float32)

// geluAVX512 computes kernels.Gelu(dst, src, bias) (bias empty for nil),
// the values after the last whole 16 under a mask. Requires AVX-512 F;
// len(dst) >= len(src), len(bias) 0 or >= len(src).
//
//go:noescape
func geluAVX512(dst, src, bias []float32, c *[kernels.VecRows][8]float32)

// SoftmaxRowAVX512 computes kernels.SoftmaxRow(x, scale). Requires
// AVX-512 F.
func SoftmaxRowAVX512(x []float32, scale float32) {
	kernels.SoftmaxRowWith(x, scale, &softmaxAVX512)
}

var softmaxAVX512 = kernels.SoftmaxLanes{
	Max:    func(x []float32, scale float32) float32 { return maxScaledAVX512(x, scale, kernels.VecConsts()) },
	ExpSum: func(x []float32, scale, m float32) float32 { return expSumAVX512(x, scale, m, kernels.VecConsts()) },
	Scale:  scaleAVX512,
}

// AddBiasAVX512 computes kernels.AddBias(y, bias, res). Requires AVX-512
// F.
func AddBiasAVX512(y, bias, res []float32) {
	bias = bias[:len(y)] // Go checks the bounds the assembly trusts
	if res != nil {
		res = res[:len(y)]
	}
	if len(y) > 0 {
		addBiasAVX512(y, bias, res)
	}
}

// GeluAVX512 computes kernels.Gelu(dst, src, bias). Requires AVX-512 F.
func GeluAVX512(dst, src, bias []float32) {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	if bias != nil {
		bias = bias[:len(src)]
	}
	if len(src) > 0 {
		geluAVX512(dst, src, bias, kernels.VecConsts())
	}
}

// sigmoidAVX512 computes kernels.Sigmoid(dst, src), the values after the
// last whole 16 under a mask. Requires AVX-512 F; len(dst) >= len(src).
//
//go:noescape
func sigmoidAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)

// tanhAVX512 computes kernels.Tanh(dst, src), the values after the last
// whole 16 under a mask. Requires AVX-512 F; len(dst) >= len(src).
//
//go:noescape
func tanhAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)

// geluTanhAVX512 computes kernels.XSigmoid(dst, src, c), the values after
// the last whole 16 under a mask. Requires AVX-512 F; len(dst) >= len(src).
//
//go:noescape
func geluTanhAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)

// SigmoidAVX512 computes kernels.Sigmoid(dst, src). Requires AVX-512 F.
func SigmoidAVX512(dst, src []float32) {
	dst = dst[:len(src)] // Go checks the bounds the assembly trusts
	if len(src) > 0 {
		sigmoidAVX512(dst, src, kernels.ActConsts())
	}
}

// TanhAVX512 computes kernels.Tanh(dst, src). Requires AVX-512 F.
func TanhAVX512(dst, src []float32) {
	dst = dst[:len(src)]
	if len(src) > 0 {
		tanhAVX512(dst, src, kernels.ActConsts())
	}
}

// GeluTanhAVX512 computes kernels.GeluTanh(dst, src). Requires AVX-512 F.
func GeluTanhAVX512(dst, src []float32) { XSigmoidAVX512(dst, src, kernels.ActConsts()) }

// XSigmoidAVX512 computes kernels.XSigmoid(dst, src, c). Requires AVX-512
// F.
func XSigmoidAVX512(dst, src []float32, c *[kernels.ActRows][8]float32) {
	dst = dst[:len(src)]
	if len(src) > 0 {
		geluTanhAVX512(dst, src, c)
	}
}
