package kernels

import "math"

// Vector math of the transformer paths: the softmax of a row, GELU and a
// bias (plus residual) addition. Every product in these references is
// rounded to float32 by an explicit conversion, which keeps the compiler
// from fusing it into a multiply-add on any architecture: the SIMD twins
// multiply and add separately, lane by lane, and give the same bits.
// GELU's multiply-adds are fused instead, FMA32 here and one fused
// instruction in its twins.

// Constants of ExpNeg: the Cephes expf reduction and polynomial.
const (
	expLog2e = float32(1.44269504088896341)
	expMagic = float32(12582912) // 1.5·2²³: adding it rounds to an integer
	expLn2Hi = float32(0.693359375)
	expLn2Lo = float32(-2.12194440e-4)
	expP0    = float32(1.9875691500e-4)
	expP1    = float32(1.3981999507e-3)
	expP2    = float32(8.3334519073e-3)
	expP3    = float32(4.1665795894e-2)
	expP4    = float32(1.6666665459e-1)
	expP5    = float32(5.0000001201e-1)
	// ExpNegMin is the smallest argument ExpNeg does not flush to 0:
	// e**x is a normal float32 from here.
	ExpNegMin = float32(-87.33654)
)

// ExpNeg returns e**d for d <= 0 within 2 float32 ulps, 0 for d below
// ExpNegMin, NaN for NaN. d = k·ln2 + r with |r| <= ln2/2 and
// e**r = 1 + r + r²·P(r), P of degree 5. Results for d > 0 are
// unspecified.
func ExpNeg(d float32) float32 { return expNegLo(d, 0) }

// expNegLo returns e**(d+lo) as ExpNeg(d) does e**d, lo (|lo| at most
// half an ulp of d) added to the reduced argument r: the low part of an
// argument computed to more than float32's precision. 0 for d below
// ExpNegMin, whatever lo.
func expNegLo(d, lo float32) float32 {
	if d < ExpNegMin {
		return 0
	}
	t := float32(d*expLog2e) + expMagic
	k := int32(math.Float32bits(t)) - 0x4b400000
	n := t - expMagic
	r := float32(d-float32(n*expLn2Hi)) - float32(n*expLn2Lo)
	r += lo
	// P(r) by Estrin's scheme: shorter dependency chains than Horner's
	// keep more SIMD iterations in flight.
	r2 := float32(r * r)
	pa := float32(expP0*r) + expP1
	pb := float32(expP2*r) + expP3
	pc := float32(expP4*r) + expP5
	p := float32(float32(float32(pa*r2)+pb)*r2) + pc
	y := float32(float32(p*r2)+r) + 1
	return y * math.Float32frombits(uint32(k+127)<<23)
}

// SoftmaxRow sets x to softmax(scale·x), as in the pure-Go loop below:
// y = scale·x, m the largest y (NaN ignored), e = ExpNeg(y - m), and x
// becomes e·(1/Σe). Σe runs over the whole blocks of 8 values in lanes:
// two 8-lane accumulators take alternate blocks, are added lane by lane,
// then folded 8 → 4 → 2 → 1 (lane i with lane i+4, then i+2, then i+1);
// the values after the last whole block are added one by one. A row
// holding NaN, +Inf, or only -Inf becomes NaN; -Inf elsewhere gives 0.
func SoftmaxRow(x []float32, scale float32) { SoftmaxRowWith(x, scale, &softmaxLanes) }

// SoftmaxLanes are the pieces of SoftmaxRow a kernel table runs on a
// row's whole blocks of 8 values (a length that is a positive multiple of
// 8): Max returns the largest scale·x (NaN ignored), ExpSum is
// ExpSumLanes, Scale is ScaleRow.
type SoftmaxLanes struct {
	Max    func(x []float32, scale float32) float32
	ExpSum func(x []float32, scale, m float32) float32
	Scale  func(x []float32, s float32)
}

var softmaxLanes = SoftmaxLanes{Max: maxScaled, ExpSum: ExpSumLanes, Scale: ScaleRow}

// SoftmaxRowWith computes SoftmaxRow(x, scale) with l on the whole blocks
// of 8 and in Go on the values after them.
func SoftmaxRowWith(x []float32, scale float32, l *SoftmaxLanes) {
	if len(x) == 0 {
		return
	}
	n8 := len(x) &^ 7
	m, s := float32(math.Inf(-1)), float32(0)
	if n8 > 0 {
		m = l.Max(x[:n8], scale)
	}
	m = max(m, maxScaled(x[n8:], scale))
	if n8 > 0 {
		s = l.ExpSum(x[:n8], scale, m)
	}
	for j := n8; j < len(x); j++ {
		e := ExpNeg(float32(scale*x[j]) - m)
		x[j] = e
		s += e
	}
	inv := 1 / s
	if n8 > 0 {
		l.Scale(x[:n8], inv)
	}
	ScaleRow(x[n8:], inv)
}

// maxScaled returns the largest scale·x, NaN ignored (-Inf for none).
func maxScaled(x []float32, scale float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if y := float32(scale * v); y > m {
			m = y
		}
	}
	return m
}

// ExpSumLanes sets x[j] = ExpNeg(scale·x[j] - m) for len(x) a multiple
// of 8 and returns their sum in SoftmaxRow's lane order.
func ExpSumLanes(x []float32, scale, m float32) float32 {
	var acc [2][8]float32
	for b := 0; b*8 < len(x); b++ {
		blk := x[b*8 : b*8+8]
		for l, v := range blk {
			e := ExpNeg(float32(scale*v) - m)
			blk[l] = e
			acc[b&1][l] += e
		}
	}
	var s8 [8]float32
	for l := range s8 {
		s8[l] = acc[0][l] + acc[1][l]
	}
	return FoldLanes(&s8)
}

// FoldLanes adds 8 lanes as the SIMD kernels fold a register:
// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
func FoldLanes(s *[8]float32) float32 {
	a0, a1, a2, a3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
	b0, b1 := a0+a2, a1+a3
	return b0 + b1
}

// ScaleRow sets x[j] = x[j]·s.
func ScaleRow(x []float32, s float32) {
	for j := range x {
		x[j] *= s
	}
}

// AddBias sets y[j] = (y[j] + bias[j]) + res[j] for j < len(y); res may
// be nil (then y[j] + bias[j]). len(bias), len(res) >= len(y).
func AddBias(y, bias, res []float32) {
	bias = bias[:len(y)]
	if res == nil {
		for j := range y {
			y[j] += bias[j]
		}
		return
	}
	res = res[:len(y)]
	for j := range y {
		y[j] = (y[j] + bias[j]) + res[j]
	}
}

// GELU: gelu(x) = 0.5·x·(1 + erf(x/√2)) = 0.5·x·c with, for a = |x|/√2,
// c = 2 - erfc(a) when x >= 0 and erfc(a) otherwise, which keeps the
// negative tail's relative precision. erfc(a) = g(a)·e**(-a²), g smooth:
// on each piece of geluBounds, a polynomial of degree GeluDegree-1 in
// t = a·scale + off (t in [-1, 1], a hair below -1 where a + 1 rounds up
// to a piece's start) interpolates g at Chebyshev points. The piece is
// read from the bits of a + 1, its exponent and the first bit of its
// significand: the pieces are the half-octaves of a + 1, so an addition,
// a shift and a subtraction find it, where comparing a with each bound
// took two instructions a bound. x² = hi + lo exactly (lo by one fused
// multiply-add), and e**(-a²) = e**(-hi/2 - lo/2): lo/2 joins the
// exponential's reduced argument. Every multiply-add that the SIMD twins
// fuse is FMA32 here.

// geluBounds are the pieces' ends, in a: a + 1 runs over [1, 1.5), [1.5,
// 2), [2, 3), [3, 4), [4, 6), [6, 8), [8, 12). a is at most 10 (x clamps
// at VecMaxX); erfc(10) is below float32's smallest subnormal, and
// e**(-a²) underflows from a = 9.35 on.
var geluBounds = [...]float64{0, 0.5, 1, 2, 3, 5, 7, 10.01}

// GeluDegree is the number of coefficients of GELU's polynomials.
const GeluDegree = 8

// Rows of VecConsts, each a value broadcast over 8 lanes (bit patterns
// for the masks), except the GELU pieces' rows: piece i in lane i, the
// lane past the last piece repeating it. Rows VecG0+GeluDegree to
// VecRows-1 are zero: ActConsts' rows start at VecRows, where the kernels
// read them.
const (
	VecLog2e   = 0
	VecMagic   = 1
	VecLn2Hi   = 2
	VecLn2Lo   = 3
	VecP0      = 4 // P0..P5 in rows 4..9
	VecExpMin  = 10
	VecExpBias = 11 // bits 0x4b400000 - 127: bits(t) less it is k + 127
	VecOne     = 12
	VecTwo     = 13
	VecHalf    = 14
	VecAbs     = 15 // bits 0x7fffffff
	VecSplit   = 16 // bits 0xfffff000: the high 12 bits of a significand (no kernel reads it)
	VecSign    = 17 // bits 0x80000000
	VecNegInf  = 18
	VecInvSq2  = 19
	VecMaxX    = 20 // √2·10: |x| clamps here, a = 10 in the last GELU piece
	VecGScale  = 21 // per piece: t = a·scale + off
	VecGOff    = 22
	VecGPiece  = 23 // bits 254: bits(a + 1) >> 22 less it is the piece
	VecNegHalf = 24
	VecG0      = 25 // c[k] of the pieces in row VecG0+k, k < GeluDegree
	VecRows    = 37
)

// ErfcxDegree is one more than the degree of ErfcxPiece's polynomials.
const ErfcxDegree = 10

// ErfcxPiece returns the polynomial, in powers of t = (a - mid)·scale with
// mid = (lo+hi)/2 and scale = 2/(hi-lo), of degree 9 that interpolates
// erfcx a = erfc(a)·e**(a²) at the Chebyshev points of [lo, hi]
// (math.Erfc in float64): c[k] is the coefficient of t^k.
func ErfcxPiece(lo, hi float64) (c [ErfcxDegree]float64) {
	erfcxInterp(lo, hi, c[:])
	return c
}

// erfcxInterp sets c to ErfcxPiece's polynomial of degree len(c)-1.
func erfcxInterp(lo, hi float64, c []float64) {
	n := len(c)
	cheb := make([][]float64, n) // cheb[k][j]: coefficient of t^j in T_k(t)
	for k := range cheb {
		cheb[k] = make([]float64, n)
	}
	cheb[0][0] = 1
	if n > 1 {
		cheb[1][1] = 1
	}
	for k := 2; k < n; k++ {
		for j := 0; j < n; j++ {
			if j > 0 {
				cheb[k][j] += 2 * cheb[k-1][j-1]
			}
			cheb[k][j] -= cheb[k-2][j]
		}
	}
	g, ch := make([]float64, n), make([]float64, n)
	for j := range g {
		z := (lo+hi)/2 + (hi-lo)/2*math.Cos(math.Pi*(float64(j)+0.5)/float64(n))
		g[j] = math.Erfc(z) * math.Exp(z*z)
	}
	for k := range ch { // Chebyshev coefficients of the interpolant
		for j := range g {
			ch[k] += g[j] * math.Cos(float64(k)*math.Pi*(float64(j)+0.5)/float64(n))
		}
		ch[k] *= 2.0 / float64(n)
	}
	ch[0] /= 2
	for j := range c { // in powers of t
		c[j] = 0
		for k := 0; k < n; k++ {
			c[j] += ch[k] * cheb[k][j]
		}
	}
}

var vecConsts = func() (t [VecRows][8]float32) {
	bits := math.Float32frombits
	for l := 0; l < 8; l++ {
		for r, v := range []float32{
			VecLog2e: expLog2e, VecMagic: expMagic, VecLn2Hi: expLn2Hi, VecLn2Lo: expLn2Lo,
			VecP0: expP0, VecP0 + 1: expP1, VecP0 + 2: expP2, VecP0 + 3: expP3, VecP0 + 4: expP4, VecP0 + 5: expP5,
			VecExpMin: ExpNegMin, VecExpBias: bits(0x4b400000 - 127), VecOne: 1, VecTwo: 2, VecHalf: 0.5,
			VecAbs: bits(0x7fffffff), VecSplit: bits(0xfffff000), VecSign: bits(0x80000000),
			VecNegInf: float32(math.Inf(-1)), VecInvSq2: float32(1 / math.Sqrt2), VecMaxX: float32(math.Sqrt2 * 10),
			VecGPiece: bits(254), VecNegHalf: -0.5,
		} {
			t[r][l] = v
		}
	}
	const pieces = len(geluBounds) - 1
	var c [GeluDegree]float64
	for i := 0; i < 8; i++ {
		p := min(i, pieces-1)
		lo, hi := geluBounds[p], geluBounds[p+1]
		erfcxInterp(lo, hi, c[:])
		for j, m := range c {
			t[VecG0+j][i] = float32(m)
		}
		t[VecGScale][i] = float32(2 / (hi - lo))
		t[VecGOff][i] = float32(-(lo + hi) / (hi - lo))
	}
	return
}()

// VecConsts returns the constants the SIMD twins of ExpNeg and Gelu read.
// Callers must not modify them.
func VecConsts() *[VecRows][8]float32 { return &vecConsts }

// Gelu sets dst[j] = gelu(src[j] + bias[j]), or gelu(src[j]) when bias
// is nil, with GELU's exact (erf) form; dst may be src. len(dst), and
// len(bias) when bias is not nil, >= len(src).
func Gelu(dst, src, bias []float32) {
	dst = dst[:len(src)]
	if bias != nil {
		bias = bias[:len(src)]
	}
	for j, x := range src {
		if bias != nil {
			x += bias[j]
		}
		dst[j] = GeluOne(x)
	}
}

// GeluOne returns gelu(x) as Gelu computes it.
func GeluOne(x float32) float32 {
	c := &vecConsts
	xa := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	if !(xa < c[VecMaxX][0]) {
		xa = c[VecMaxX][0] // NaN and the far tail: e**(-a²) is 0 there
	}
	hi := float32(xa * xa)
	lo := FMA32(xa, xa, -hi) // x² - hi, exactly
	a := float32(xa * c[VecInvSq2][0])
	i := int(math.Float32bits(a+c[VecOne][0])>>22) - int(math.Float32bits(c[VecGPiece][0]))
	t := FMA32(a, c[VecGScale][i], c[VecGOff][i])
	g := c[VecG0+GeluDegree-1][i] // g(t) by Horner's scheme
	for k := GeluDegree - 2; k >= 0; k-- {
		g = FMA32(g, t, c[VecG0+k][i])
	}
	e := float32(g * geluExp(float32(hi*c[VecNegHalf][0]), lo)) // erfc(a)
	if x >= 0 {
		e = 2 - e
	}
	return float32(0.5*x) * e
}

// geluExp returns e**(d - lo/2) for d = -hi/2 as ExpNeg does e**d, but
// with fused multiply-adds, lo/2 taken from the reduced argument r.
func geluExp(d, lo float32) float32 {
	if d < ExpNegMin {
		return 0
	}
	t := FMA32(d, expLog2e, expMagic)
	k := int32(math.Float32bits(t)) - 0x4b400000
	n := t - expMagic
	r := FMA32(n, -expLn2Hi, d)
	r = FMA32(n, -expLn2Lo, r)
	r = FMA32(lo, -0.5, r)
	p := FMA32(expP0, r, expP1) // e**r = 1 + r + r²·P(r), P by Horner
	p = FMA32(p, r, expP2)
	p = FMA32(p, r, expP3)
	p = FMA32(p, r, expP4)
	p = FMA32(p, r, expP5)
	y := FMA32(p, float32(r*r), r) + 1
	return y * math.Float32frombits(uint32(k+127)<<23)
}
