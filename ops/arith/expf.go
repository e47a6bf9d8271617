package arith

import "math"

// The hot float32 paths (Exp, Erf, and the activations Sigmoid, Tanh,
// Gelu and Swish of ops/activation) compute with float32 polynomials
// instead of math's float64 functions, about twice as fast
// (BenchmarkUnaryMath, BenchmarkActivations). Against math's float64
// functions over every 131st float32 value (TestFloat32Approximations
// checks a sample): e**x within 1.2 ulp, erf 2.6, erfc 3.3.

// Expf returns e**x in float32 for a float64 argument: x = k·ln2 + r with
// |r| <= ln2/2 reduced in float64 (so an argument computed in float64
// keeps its precision: exp would magnify a float32 rounding of it by
// |x|), e**r by its Taylor polynomial of degree 7 in float32 (truncation
// below 0.05 ulp), scaled by 2**k. The float32 Exp operator computes
// Expf(float64(x)).
func Expf(x float64) float32 {
	if !(x < 88.72284) { // overflow, +Inf, NaN
		if x != x {
			return float32(x)
		}
		return float32(math.Inf(1))
	}
	if x < -103.972 { // below half the smallest subnormal
		return 0
	}
	const shifter = 0x1.8p52 // adding and subtracting it rounds to an integer, without a branch
	kf := (x*math.Log2E + shifter) - shifter
	k := int32(kf)
	r := float32(x - kf*math.Ln2)
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	if k > 127 {
		p *= 2
		k--
	}
	if k < -126 { // a subnormal result: scale in two steps, rounding once
		return p * math.Float32frombits(uint32(k+64+127)<<23) * (1.0 / (1 << 64))
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}
