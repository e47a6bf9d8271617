package arith

import (
	"math"

	"github.com/quantserve/quantserve/kernels"
)

// erfC are the Taylor coefficients of erf: erf x = x·Σ c[n]·x^(2n),
// c[n] = 2/√π · (-1)^n / (n!·(2n+1)).
var erfC = func() (c [8]float32) {
	f := 2 / math.Sqrt(math.Pi)
	fact := 1.0
	for n := range c {
		if n > 0 {
			fact *= float64(n)
		}
		s := f / (fact * float64(2*n+1))
		if n%2 == 1 {
			s = -s
		}
		c[n] = float32(s)
	}
	return
}()

// erfcPiece approximates g(a) = erfc(a)·e**(a²) on one interval:
// g(mid + t/scale) = Σ c[k]·t^k for t in [-1, 1].
type erfcPiece struct {
	mid, scale float32
	c          [kernels.ErfcxDegree]float32
}

// erfcBounds split [0.5, 10.06) into the pieces' intervals; erfc is
// below half the smallest float32 subnormal from 10.06 on.
var erfcBounds = [...]float64{0.5, 1.5, 3, 5.5, 10.06}

// erfcPieces interpolate g at the Chebyshev points of each interval
// (math.Erfc in float64), converted to powers of t.
var erfcPieces = func() (ps [4]erfcPiece) {
	for i := range ps {
		lo, hi := erfcBounds[i], erfcBounds[i+1]
		for j, m := range kernels.ErfcxPiece(lo, hi) {
			ps[i].c[j] = float32(m)
		}
		ps[i].mid = float32((lo + hi) / 2)
		ps[i].scale = float32(2 / (hi - lo))
	}
	return
}()

// erfc32Pos returns erfc a for a >= 0.5 (or NaN).
func erfc32Pos(a float32) float32 { return erfcSq(a, float64(a)*float64(a)) }

// erfcSq returns erfc a = g(a)·e**(-a²) for a >= 0.5 (or NaN), given a²
// exactly (in float64) so that the exponential does not magnify a
// rounding of it.
func erfcSq(a float32, a2 float64) float32 {
	if !(a < 10.06) {
		if a != a {
			return a
		}
		return 0
	}
	i := 0
	if a >= 1.5 {
		i = 1
		if a >= 3 {
			i = 2
			if a >= 5.5 {
				i = 3
			}
		}
	}
	p := &erfcPieces[i]
	t := (a - p.mid) * p.scale
	c := &p.c
	g := c[9]
	g = g*t + c[8]
	g = g*t + c[7]
	g = g*t + c[6]
	g = g*t + c[5]
	g = g*t + c[4]
	g = g*t + c[3]
	g = g*t + c[2]
	g = g*t + c[1]
	g = g*t + c[0]
	return g * Expf(-a2)
}

// Erf32 returns erf x in float32: the Taylor series below 0.5, 1 - erfc|x|
// above (erfc a piecewise polynomial in |x| times e**(-x²)).
func Erf32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.5 {
		z := x * x
		c := &erfC
		p := c[7]
		p = p*z + c[6]
		p = p*z + c[5]
		p = p*z + c[4]
		p = p*z + c[3]
		p = p*z + c[2]
		p = p*z + c[1]
		p = p*z + c[0]
		return x * p
	}
	r := 1 - erfc32Pos(a)
	if x < 0 {
		return -r
	}
	return r
}

// erfc32 returns erfc x = 1 - erf x in float32, keeping relative
// precision in the tail (x >= 0.5).
func erfc32(x float32) float32 {
	if x >= 0.5 {
		return erfc32Pos(x)
	}
	return 1 - Erf32(x)
}
