package kernels

import "math"

// The logistic sigmoid and tanh of float32 slices, for the Sigmoid and
// Tanh operators and the gates of recurrent cells. Both rest on ExpNeg,
// and, as the rest of the vector math, round every product to float32
// by an explicit conversion: the SIMD twins multiply and add separately,
// lane by lane, and give the same bits.

// tanhSmall is where Tanh leaves its odd polynomial for
// (1 - e**-2a)/(1 + e**-2a): below it the quotient's 1 - e would cancel
// most of its bits.
const tanhSmall = float32(0.625)

// tanhC are the Taylor coefficients of tanh: tanh x = x + x·z·Σ c[i]·z^i
// for z = x², |x| < 0.625.
var tanhC = [...]float32{-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925,
	21844.0 / 6081075, -929569.0 / 638512875, 6404582.0 / 10854718875, -443861162.0 / 1856156927625}

// Rows of ActConsts after VecConsts' (rows 0..VecRows-1 are VecConsts'
// own, so ExpNeg's kernels read them at the same offsets).
const (
	ActTanhSmall = VecRows     // tanhSmall
	ActTanhC0    = VecRows + 1 // tanhC[k] in row ActTanhC0+k, k < 9
	// GeluTanh's float64 constants, each a float64's bits in every pair
	// of lanes (low word first): a broadcast of the row's first 8 bytes
	// reads it.
	ActGeluA = ActTanhC0 + len(tanhC)
	ActGeluK = ActGeluA + 1
	ActRows  = ActGeluK + 1
)

var actConsts = func() (t [ActRows][8]float32) {
	copy(t[:], vecConsts[:])
	for l := range 8 {
		t[ActTanhSmall][l] = tanhSmall
		for k, c := range tanhC {
			t[ActTanhC0+k][l] = c
		}
	}
	putFloat64(&t[ActGeluA], geluTanhA)
	putFloat64(&t[ActGeluK], geluTanhK)
	return t
}()

// putFloat64 writes v's bits into every pair of row's lanes, low word
// first (rowFloat64 reads it back).
func putFloat64(row *[8]float32, v float64) {
	for l := range row {
		row[l] = math.Float32frombits(uint32(math.Float64bits(v) >> (32 * (l % 2))))
	}
}

// ActConsts returns the constants the SIMD twins of Sigmoid, Tanh and
// GeluTanh read: VecConsts' rows, then Tanh's, then GeluTanh's. Callers
// must not modify them.
func ActConsts() *[ActRows][8]float32 { return &actConsts }

// Sigmoid sets dst[j] = 1/(1 + e**-src[j]) (SigmoidOne); dst may be src.
// len(dst) >= len(src).
func Sigmoid(dst, src []float32) {
	dst = dst[:len(src)]
	for j, x := range src {
		dst[j] = SigmoidOne(x)
	}
}

// SigmoidOne returns the logistic function of x within 4 float32 ulps:
// with e = e**-|x|, e/(1 + e) for negative x (the small results keep their
// precision) and 1/(1 + e) otherwise. 0 below -87.3 (ExpNegMin), NaN for
// NaN.
func SigmoidOne(x float32) float32 {
	e := ExpNeg(-math.Float32frombits(math.Float32bits(x) &^ (1 << 31)))
	n := float32(1)
	if x < 0 {
		n = e
	}
	return n / (1 + e)
}

// Tanh sets dst[j] = tanh src[j] (TanhOne); dst may be src. len(dst) >=
// len(src).
func Tanh(dst, src []float32) {
	dst = dst[:len(src)]
	for j, x := range src {
		dst[j] = TanhOne(x)
	}
}

// TanhOne returns tanh x within 4 float32 ulps: for a = |x|, the odd
// polynomial of tanhC below a = 0.625, (1 - e)/(1 + e) with e = e**-2a
// above (1 from a = 9.1 on, where float32 rounds to it), either given x's
// sign bit (tanh -0 is -0); NaN for NaN.
func TanhOne(x float32) float32 {
	sign := math.Float32bits(x) & (1 << 31)
	a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	var t float32
	if a < tanhSmall {
		z := float32(a * a)
		c := &tanhC
		p := c[8]
		for k := 7; k >= 0; k-- {
			p = float32(p*z) + c[k]
		}
		t = a + float32(float32(a*z)*p)
	} else {
		e := ExpNeg(-(a + a))
		t = (1 - e) / (1 + e)
	}
	return math.Float32frombits(math.Float32bits(t) | sign)
}
