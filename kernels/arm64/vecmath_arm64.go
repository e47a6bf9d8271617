//go:build gc && !purego

package arm64

import (
	"math"

	"github.com/quantserve/quantserve/kernels"
)

// neonRows is the number of rows of neonConsts.
const neonRows = 22 + 2*(kernels.VecRows-kernels.VecMid)

// neonConsts are the constants of vecmath_arm64.s, one row of 4 lanes
// each, taken from kernels.VecConsts: ExpNeg's rows (0..11), GELU's
// maxX, split mask, 1/√2 and 0.5 (12..15), the pieces' bounds (16..19),
// the multiplier and offsets that turn a piece index i into TBL's byte
// indexes 4i..4i+3 (20..21), then each per-piece row (mid, scale,
// c0..c9) as two rows: its 8 lanes.
var neonConsts = func() (t [neonRows][4]float32) {
	c := kernels.VecConsts()
	set := func(r int, row int) { copy(t[r][:], c[row][:4]) }
	for r := 0; r <= kernels.VecExpBias; r++ {
		set(r, r)
	}
	for i, row := range []int{kernels.VecMaxX, kernels.VecSplit, kernels.VecInvSq2, kernels.VecHalf} {
		set(12+i, row)
	}
	for b := 0; b < 4; b++ {
		set(16+b, kernels.VecBound+b)
	}
	for l := 0; l < 4; l++ {
		t[20][l] = math.Float32frombits(0x04040404)
		t[21][l] = math.Float32frombits(0x03020100)
	}
	for k := 0; k < kernels.VecRows-kernels.VecMid; k++ {
		copy(t[22+2*k][:], c[kernels.VecMid+k][:4])
		copy(t[23+2*k][:], c[kernels.VecMid+k][4:])
	}
	return t
}()

// actRows is the number of rows of actConsts.
const actRows = 12 + 1 + kernels.ActRows - kernels.ActTanhC0

// actConsts are the constants of sigmoidNEON, tanhNEON and
// geluTanhNEON, one row of 4 lanes each, taken from kernels.ActConsts:
// ExpNeg's rows (0..11, as neonConsts'), then Tanh's bound (12) and
// coefficients c0..c8 (13..21), then GeluTanh's float64 constants A (22)
// and K (23), each row holding its float64's bits twice (low word first),
// a float64 in each half.
var actConsts = actConstsOf(kernels.ActConsts())

// actConstsOf returns actConsts' rows taken from c.
func actConstsOf(c *[kernels.ActRows][8]float32) (t [actRows][4]float32) {
	for r := 0; r <= kernels.VecExpBias; r++ {
		copy(t[r][:], c[r][:4])
	}
	for r := kernels.ActTanhSmall; r < kernels.ActRows; r++ {
		copy(t[12+r-kernels.ActTanhSmall][:], c[r][:4])
	}
	return t
}

// sigmoidNEON computes kernels.Sigmoid(dst, src). Requires ASIMD;
// len(src) a positive multiple of 4, len(dst) >= len(src).
//
//go:noescape
func sigmoidNEON(dst, src []float32, c *[actRows][4]float32)

// tanhNEON computes kernels.Tanh(dst, src). Requires ASIMD; len(src) a
// positive multiple of 4, len(dst) >= len(src).
//
//go:noescape
func tanhNEON(dst, src []float32, c *[actRows][4]float32)

// geluTanhNEON computes kernels.XSigmoid(dst, src, c) (GeluTanh with
// actConsts). Requires ASIMD;
// len(src) a positive multiple of 4, len(dst) >= len(src).
//
//go:noescape
func geluTanhNEON(dst, src []float32, c *[actRows][4]float32)

// SigmoidNEON computes kernels.Sigmoid(dst, src). Requires ASIMD.
func SigmoidNEON(dst, src []float32) { eachNEON(dst, src, sigmoidNEON, kernels.Sigmoid) }

// TanhNEON computes kernels.Tanh(dst, src). Requires ASIMD.
func TanhNEON(dst, src []float32) { eachNEON(dst, src, tanhNEON, kernels.Tanh) }

// GeluTanhNEON computes kernels.GeluTanh(dst, src); dst may be src.
// Requires ASIMD.
func GeluTanhNEON(dst, src []float32) { eachNEON(dst, src, geluTanhNEON, kernels.GeluTanh) }

// XSigmoidNEON computes kernels.XSigmoid(dst, src, c); dst may be src.
// Requires ASIMD. c's rows are laid out as the kernel reads them on every
// call (384 bytes).
func XSigmoidNEON(dst, src []float32, c *[kernels.ActRows][8]float32) {
	dst = dst[:len(src)]
	n4 := len(src) &^ 3
	if n4 > 0 {
		t := actConstsOf(c)
		geluTanhNEON(dst[:n4], src[:n4], &t)
	}
	if n4 < len(src) {
		kernels.XSigmoid(dst[n4:], src[n4:], c)
	}
}

// eachNEON runs an element-wise kernel on the whole blocks of 4 of src
// and its reference on the values after them.
func eachNEON(dst, src []float32, k func(dst, src []float32, c *[actRows][4]float32), ref func(dst, src []float32)) {
	dst = dst[:len(src)]
	n4 := len(src) &^ 3
	if n4 > 0 {
		k(dst[:n4], src[:n4], &actConsts)
	}
	if n4 < len(src) {
		ref(dst[n4:], src[n4:])
	}
}

// maxScaledNEON sets m[l] to the largest float32(scale·x[j]) over the
// j = l mod 8 and m[l] itself, NaN ignored. Requires ASIMD; len(x) a
// positive multiple of 8.
//
//go:noescape
func maxScaledNEON(x []float32, scale float32, m *[8]float32)

// expSumNEON sets x[j] = kernels.ExpNeg(scale·x[j] - m) and s to the
// lane sums kernels.ExpSumLanes folds. Requires ASIMD; len(x) a positive
// multiple of 8.
//
//go:noescape
func expSumNEON(x []float32, scale, m float32, c *[neonRows][4]float32, s *[8]float32)

// scaleNEON computes kernels.ScaleRow(x, s). Requires ASIMD; len(x) a
// positive multiple of 8.
//
//go:noescape
func scaleNEON(x []float32, s float32)

// addBiasNEON computes kernels.AddBias(y, bias, res) (res empty for nil).
// Requires ASIMD; len(y) a positive multiple of 8, len(bias) >= len(y),
// len(res) 0 or >= len(y).
//
//go:noescape
func addBiasNEON(y, bias, res []float32)

// geluNEON computes kernels.Gelu(dst, src, bias) (bias empty for nil).
// Requires ASIMD; len(src) a positive multiple of 4, len(dst) >=
// len(src), len(bias) 0 or >= len(src).
//
//go:noescape
func geluNEON(dst, src, bias []float32, c *[neonRows][4]float32)

// SoftmaxRowNEON computes kernels.SoftmaxRow(x, scale). Requires ASIMD.
func SoftmaxRowNEON(x []float32, scale float32) { kernels.SoftmaxRowWith(x, scale, &softmaxNEON) }

var softmaxNEON = kernels.SoftmaxLanes{
	Max: func(x []float32, scale float32) float32 {
		inf := float32(math.Inf(-1))
		lanes := [8]float32{inf, inf, inf, inf, inf, inf, inf, inf}
		maxScaledNEON(x, scale, &lanes)
		m := inf
		for _, v := range lanes {
			if v > m {
				m = v
			}
		}
		return m
	},
	ExpSum: func(x []float32, scale, m float32) float32 {
		var s [8]float32
		expSumNEON(x, scale, m, &neonConsts, &s)
		return kernels.FoldLanes(&s)
	},
	Scale: scaleNEON,
}

// AddBiasNEON computes kernels.AddBias(y, bias, res). Requires ASIMD.
func AddBiasNEON(y, bias, res []float32) {
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
		addBiasNEON(y[:n8], bias[:n8], r)
	}
	if n8 < len(y) {
		var r []float32
		if res != nil {
			r = res[n8:]
		}
		kernels.AddBias(y[n8:], bias[n8:], r)
	}
}

// GeluNEON computes kernels.Gelu(dst, src, bias): every product rounded,
// as kernels/vecmath.go specifies. Requires ASIMD.
func GeluNEON(dst, src, bias []float32) {
	dst = dst[:len(src)]
	if bias != nil {
		bias = bias[:len(src)]
	}
	n4 := len(src) &^ 3
	if n4 > 0 {
		var b []float32
		if bias != nil {
			b = bias[:n4]
		}
		geluNEON(dst[:n4], src[:n4], b, &neonConsts)
	}
	if n4 < len(src) {
		var b []float32
		if bias != nil {
			b = bias[n4:]
		}
		kernels.Gelu(dst[n4:], src[n4:], b)
	}
}
