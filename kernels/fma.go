package kernels

import "math"

// FMA32 returns x·y + z rounded once to float32: what a fused
// multiply-add instruction (vfmadd231ps, FMLA) computes. The float block
// kernels of every table accumulate with it, so float products give the
// same bits on every table, the reference included.
//
// x·y is exact in float64; the sum s = x·y + z rounds once more, and its
// rounding error e is recovered exactly (TwoSum). Rounding s to float32
// then gives the right answer except when s lies exactly halfway between
// two float32 values and e is not zero: the true sum is then on e's side.
func FMA32(x, y, z float32) float32 {
	p := float64(x) * float64(y)
	zz := float64(z)
	s := p + zz
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
