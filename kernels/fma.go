package kernels

import "math"

// FMA32 returns x·y + z rounded once to float32: what a fused
// multiply-add instruction (vfmadd231ps, FMLA) computes. The float block
// kernels of every table accumulate with it, so float products give the
// same bits on every table, the reference included.
//
// x·y is exact in float64, so s = x·y + z in float64 is the exact sum
// rounded once. s rounded to float32 is right unless s lies exactly
// halfway between two float32 values: a halfway point strictly between
// the exact sum and s would be a float64 nearer the sum than s. For s in
// float32's normal range a halfway point has bit 28 alone set below
// float32's significand; those s, and smaller ones (whose halfway points
// lie elsewhere in their bits), take fma32Exact. A compiler fusing
// x·y + z into one instruction (as Go allows) gives the same s: the
// product is exact.
func FMA32(x, y, z float32) float32 {
	p, zz := float64(x)*float64(y), float64(z)
	s := p + zz
	if b := math.Float64bits(s); b&(1<<29-1) != 1<<28 && b&(0x7ff<<52) >= (1023-126)<<52 {
		return float32(s)
	}
	return fma32Exact(p, zz, s)
}

// fma32Exact is FMA32 for any sum s = p + zz (p = x·y, exact): the
// rounding error e of s is recovered exactly (TwoSum), and s rounded to
// float32 is right except when s lies exactly halfway between two
// float32 values and e is not zero: the true sum is then on e's side.
func fma32Exact(p, zz, s float64) float32 {
	r := float32(s)
	if float64(r) == s || s != s {
		return r // s is a float32 (e cannot move it past a midpoint), or NaN
	}
	bb := s - p
	e := (p - (s - bb)) + (zz - bb)
	if e == 0 {
		return r
	}
	// The float32 neighbours of s: r and n, on the other side of s.
	lo, hi := r, r
	if float64(r) < s {
		hi = nextUp(r)
	} else {
		lo = nextDown(r)
	}
	if s != midpoint(lo, hi) {
		return r
	}
	if e > 0 {
		return hi
	}
	return lo
}

func nextUp(r float32) float32 {
	if math.IsInf(float64(r), -1) {
		return -math.MaxFloat32
	}
	return math.Nextafter32(r, float32(math.Inf(1)))
}

func nextDown(r float32) float32 {
	if math.IsInf(float64(r), 1) {
		return math.MaxFloat32
	}
	return math.Nextafter32(r, float32(math.Inf(-1)))
}

// midpoint returns the value halfway between adjacent float32 values lo
// and hi, exact in float64; an infinite end stands for 2^128 (where
// rounding to float32 overflows).
func midpoint(lo, hi float32) float64 {
	l, h := float64(lo), float64(hi)
	if math.IsInf(h, 1) {
		h = 0x1p128
	}
	if math.IsInf(l, -1) {
		l = -0x1p128
	}
	return (l + h) / 2
}
