//go:build gc && !purego

package arm64

import (
	"math"

	"github.com/quantserve/quantserve/kernels"
)

// Rows of neonConsts, one row of 4 lanes each: ExpNeg's rows (0..11,
// kernels.VecConsts' own, which expSumNEON reads too), then geluNEON's.
// Its first eight rows stay in registers; the by-element multiplies read
// the multiplier rows lane by lane. The accumulators of its multiply-adds
// (ngAcc on) are loaded afresh for every block of 8, in fours, each value
// twice: a row for lanes 0-3 and one for lanes 4-7. The pieces' rows
// come last, in the order the loop reads them, each as two rows: its 8
// lanes.
const (
	ngMul    = 12 // 1/√2, -0.5, log2e, 0.5
	ngExpMul = 13 // ln2hi, ln2lo, P0
	ngIntMul = 14 // integers: 0x04040404 (a piece to TBL's byte indexes), 1<<23 (k to 2^k)
	ngMaxX   = 15
	ngOne    = 16
	ngTwo    = 17
	ngExpMin = 18
	ngMagic  = 19
	ngAcc    = 20 // TBL indexes' base, magic; 2^k's base, P1; P2, P3; P4, P5
	ngPieces = 36 // off, scale, c7 .. c0
	neonRows = ngPieces + 2*(2+kernels.GeluDegree)
)

// geluNEON's Horner scheme runs on exactly 8 coefficients: this does not
// compile for another kernels.GeluDegree.
const _ = -uint(kernels.GeluDegree - 8)

// neonConsts are the constants of vecmath_arm64.s, taken from
// kernels.VecConsts and laid out as the rows ng* describe.
var neonConsts = func() (t [neonRows][4]float32) {
	c := kernels.VecConsts()
	bits := math.Float32frombits
	for r := 0; r <= kernels.VecExpBias; r++ {
		copy(t[r][:], c[r][:4])
	}
	t[ngMul] = [4]float32{c[kernels.VecInvSq2][0], c[kernels.VecNegHalf][0], c[kernels.VecLog2e][0], c[kernels.VecHalf][0]}
	t[ngExpMul] = [4]float32{c[kernels.VecLn2Hi][0], c[kernels.VecLn2Lo][0], c[kernels.VecP0][0]}
	t[ngIntMul] = [4]float32{bits(0x04040404), bits(1 << 23)}
	// Piece i = u - piece, u = bits(a + 1)>>22, becomes TBL's byte
	// indexes 4i, 4i+1, 4i+2, 4i+3 (low byte first) as base + u·0x04040404
	// modulo 2³². 2^k's bits are (k + 127)<<23 = (bits(t) - expBias)<<23:
	// kBase + bits(t)·(1<<23) modulo 2³², kBase = -expBias<<23 (1.0's
	// bits).
	piece := math.Float32bits(c[kernels.VecGPiece][0])
	base := bits(0x03020100 - piece*0x04040404)
	kBase := bits(-(math.Float32bits(c[kernels.VecExpBias][0]) << 23))
	acc := []float32{base, c[kernels.VecMagic][0], kBase, c[kernels.VecP0+1][0],
		c[kernels.VecP0+2][0], c[kernels.VecP0+3][0], c[kernels.VecP0+4][0], c[kernels.VecP0+5][0]}
	for i, v := range acc {
		for l := 0; l < 4; l++ {
			t[ngAcc+2*i][l], t[ngAcc+2*i+1][l] = v, v
		}
	}
	for l := 0; l < 4; l++ {
		t[ngMaxX][l] = c[kernels.VecMaxX][0]
		t[ngOne][l] = c[kernels.VecOne][0]
		t[ngTwo][l] = c[kernels.VecTwo][0]
		t[ngExpMin][l] = c[kernels.VecExpMin][0]
		t[ngMagic][l] = c[kernels.VecMagic][0]
	}
	rows := []int{kernels.VecGOff, kernels.VecGScale}
	for k := kernels.GeluDegree - 1; k >= 0; k-- {
		rows = append(rows, kernels.VecG0+k)
	}
	for j, row := range rows {
		copy(t[ngPieces+2*j][:], c[row][:4])
		copy(t[ngPieces+2*j+1][:], c[row][4:])
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

// GeluNEON computes kernels.Gelu(dst, src, bias), bit for bit: a fused
// multiply-add where the reference calls kernels.FMA32, every other
// operation rounded on its own. Requires ASIMD.
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
