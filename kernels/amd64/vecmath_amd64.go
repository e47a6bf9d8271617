//go:build gc && !purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// maxScaledAVX2 returns the largest float32(scale·x[j]), NaN ignored, -Inf
// when there is none. Requires AVX2; len(x) a positive multiple of 8.
//
//go:noescape
func maxScaledAVX2(x []float32, scale float32, c *[kernels.VecRows][8]float32) float32

// expSumAVX2 computes kernels.ExpSumLanes(x, scale, m). Requires AVX2;
// len(x) a positive multiple of 8.
//
//go:noescape
func expSumAVX2(x []float32, scale, m float32, c *[kernels.VecRows][8]float32) float32

// scaleAVX2 computes kernels.ScaleRow(x, s). Requires AVX2; len(x) a
// positive multiple of 8.
//
//go:noescape
func scaleAVX2(x []float32, s float32)

// addBiasAVX2 computes kernels.AddBias(y, bias, res) (res empty for nil).
// Requires AVX2; len(y) a positive multiple of 8, len(bias) >= len(y),
// len(res) 0 or >= len(y).
//
//go:noescape
func addBiasAVX2(y, bias, res []float32)

// geluAVX2 computes kernels.Gelu(dst, src, bias) (bias empty for nil).
// Requires AVX2 and FMA; len(src) a positive multiple of 8, len(dst) >=
// len(src), len(bias) 0 or >= len(src).
//
//go:noescape
func geluAVX2(dst, src, bias []float32, c *[kernels.VecRows][8]float32)

// sigmoidAVX2 computes kernels.Sigmoid(dst, src). Requires AVX2; len(src)
// a positive multiple of 8, len(dst) >= len(src).
//
//go:noescape
func sigmoidAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)

// tanhAVX2 computes kernels.Tanh(dst, src). Requires AVX2; len(src) a
// positive multiple of 8, len(dst) >= len(src).
//
//go:noescape
func tanhAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)

// geluTanhAVX2 computes kernels.XSigmoid(dst, src, c). Requires AVX2;
// len(src) a positive multiple of 8, len(dst) >= len(src).
//
//go:noescape
func geluTanhAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)

// SoftmaxRowAVX2 computes kernels.SoftmaxRow(x, scale). Requires AVX2.
func SoftmaxRowAVX2(x []float32, scale float32) { kernels.SoftmaxRowWith(x, scale, &softmaxAVX2) }

var softmaxAVX2 = kernels.SoftmaxLanes{
	Max:    func(x []float32, scale float32) float32 { return maxScaledAVX2(x, scale, kernels.VecConsts()) },
	ExpSum: func(x []float32, scale, m float32) float32 { return expSumAVX2(x, scale, m, kernels.VecConsts()) },
	Scale:  scaleAVX2,
}

// AddBiasAVX2 computes kernels.AddBias(y, bias, res). Requires AVX2.
func AddBiasAVX2(y, bias, res []float32) {
	n8 := len(y) &^ 7
	bias = bias[:len(y)]
	if res != nil {
		res = res[:len(y)]
	}
	if n8 > 0 {
		var r []float32
		if res != nil {
			r = res[:n8]
		}
		addBiasAVX2(y[:n8], bias[:n8], r)
	}
	if n8 < len(y) {
		var r []float32
		if res != nil {
			r = res[n8:]
		}
		kernels.AddBias(y[n8:], bias[n8:], r)
	}
}

// GeluAVX2 computes kernels.Gelu(dst, src, bias). Requires AVX2 and FMA.
func GeluAVX2(dst, src, bias []float32) {
	dst = dst[:len(src)]
	if bias != nil {
		bias = bias[:len(src)]
	}
	n8 := len(src) &^ 7
	if n8 > 0 {
		var b []float32
		if bias != nil {
			b = bias[:n8]
		}
		geluAVX2(dst[:n8], src[:n8], b, kernels.VecConsts())
	}
	if n8 < len(src) {
		var b []float32
		if bias != nil {
			b = bias[n8:]
		}
		kernels.Gelu(dst[n8:], src[n8:], b)
	}
}

// SigmoidAVX2 computes kernels.Sigmoid(dst, src). Requires AVX2.
func SigmoidAVX2(dst, src []float32) { eachAVX2(dst, src, sigmoidAVX2, kernels.Sigmoid) }

// TanhAVX2 computes kernels.Tanh(dst, src). Requires AVX2.
func TanhAVX2(dst, src []float32) { eachAVX2(dst, src, tanhAVX2, kernels.Tanh) }

// GeluTanhAVX2 computes kernels.GeluTanh(dst, src). Requires AVX2.
func GeluTanhAVX2(dst, src []float32) { XSigmoidAVX2(dst, src, kernels.ActConsts()) }

// XSigmoidAVX2 computes kernels.XSigmoid(dst, src, c). Requires AVX2.
func XSigmoidAVX2(dst, src []float32, c *[kernels.ActRows][8]float32) {
	dst = dst[:len(src)]
	n8 := len(src) &^ 7
	if n8 > 0 {
		geluTanhAVX2(dst[:n8], src[:n8], c)
	}
	if n8 < len(src) {
		kernels.XSigmoid(dst[n8:], src[n8:], c)
	}
}

// eachAVX2 runs an element-wise kernel on the whole blocks of 8 of src
// and its reference on the values after them.
func eachAVX2(dst, src []float32, k func(dst, src []float32, c *[kernels.ActRows][8]float32), ref func(dst, src []float32)) {
	dst = dst[:len(src)]
	n8 := len(src) &^ 7
	if n8 > 0 {
		k(dst[:n8], src[:n8], kernels.ActConsts())
	}
	if n8 < len(src) {
		ref(dst[n8:], src[n8:])
	}
}
