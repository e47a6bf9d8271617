package kernels

import "math"

// GELU's tanh approximation, 0.5·x·(1 + tanh u) with
// u = √(2/π)·(x + 0.044715·x³), the Gelu operator's approximate="tanh"
// and ONNX Runtime's FastGelu, computed as x·sigmoid(t), t = 2u: the same
// function without 1 + tanh u's cancellation where u is negative.
//
// There the result is about x·e**t, and an error δ in t is an error δ in
// the result, relative: t rounded to float32 near -80 is off by up to
// 2**-18, 30 ulps of the result, and the products and sum before it add
// as much again. So t is computed in float64 (x³ is then exact to 2**-53)
// and split into float32 parts hi + lo, and e**-|t| is ExpNeg's of hi with
// lo added to the reduced argument, which keeps the result within a few
// ulps down to the tail. Every SIMD twin runs the same float64 and
// float32 operations in the same order, so all give the same bits.

// The float64 constants of t = geluTanhK·(x + geluTanhA·x³).
const (
	geluTanhA = 0.044715
	geluTanhK = 1.5957691216057308 // 2·√(2/π)
)

// GeluTanh sets dst[j] = GeluTanhOne(src[j]); dst may be src. len(dst) >=
// len(src).
func GeluTanh(dst, src []float32) { XSigmoid(dst, src, ActConsts()) }

// XSigmoid sets dst[j] = x·sigmoid(K·(x + A·x³)) for x = src[j], A and K
// the float64 constants in c's rows ActGeluA and ActGeluK, computed as
// GeluTanhOne computes GELU's (c = ActConsts()); dst may be src. len(dst)
// >= len(src). With A = 0 and K = α (XSigmoidConsts) it is x·sigmoid(α·x),
// QuickGelu and Swish, t then exact (a product of two float32 values is a
// float64 one), flushing to 0 as GeluTanhOne does where e**t leaves the
// normal floats; ±Inf give NaN (0·∞).
func XSigmoid(dst, src []float32, c *[ActRows][8]float32) {
	a, k := rowFloat64(&c[ActGeluA]), rowFloat64(&c[ActGeluK])
	dst = dst[:len(src)]
	for j, x := range src {
		dst[j] = xSigmoidOne(x, a, k)
	}
}

// XSigmoidConsts returns ActConsts with A and K in the rows of GeluTanh's
// constants, for XSigmoid and its twins.
func XSigmoidConsts(a, k float64) *[ActRows][8]float32 {
	c := actConsts
	putFloat64(&c[ActGeluA], a)
	putFloat64(&c[ActGeluK], k)
	return &c
}

// rowFloat64 returns the float64 whose bits a row's first two lanes hold.
func rowFloat64(row *[8]float32) float64 {
	return math.Float64frombits(uint64(math.Float32bits(row[1]))<<32 | uint64(math.Float32bits(row[0])))
}

// GeluTanhOne returns x·sigmoid(t), t = 2·√(2/π)·(x + 0.044715·x³),
// within 4 float32 ulps: t in float64 as hi + lo (float32 each),
// e = e**-|t| (expNegLo of -|hi| and lo with the same sign change), and
// x·((hi < 0 ? e : 1)/(1 + e)). 0 where -|t| is below ExpNegMin on the
// negative side (x below about -9.97, a result under 1.2e-37), x on the
// positive one; NaN for NaN and for -Inf (-Inf·0), +Inf for +Inf.
func GeluTanhOne(x float32) float32 { return xSigmoidOne(x, geluTanhA, geluTanhK) }

// xSigmoidOne is GeluTanhOne with the constants a and k in place of
// GELU's.
func xSigmoidOne(x float32, a, k float64) float32 {
	v := float64(x)
	x3 := float64(float64(v*v) * v)
	t := float64(k * (v + float64(a*x3)))
	hi := float32(t)
	lo := float32(t - float64(hi))
	// -|t| = dh + dl: hi's sign bit set, and lo's sign changed where hi's
	// was clear.
	hb := math.Float32bits(hi)
	dh := math.Float32frombits(hb | 1<<31)
	dl := math.Float32frombits(math.Float32bits(lo) ^ ^hb&(1<<31))
	e := expNegLo(dh, dl)
	n := float32(1)
	if hi < 0 {
		n = e
	}
	return x * (n / (1 + e))
}
