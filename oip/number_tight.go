package oip

import (
	"encoding/binary"
	"math"
)

// tightSlack is how many bytes tightRun may read from an element's start:
// a sign, eight bytes of integer digits, the point, sixteen bytes of
// fraction digits.
const tightSlack = 26

// fracPow10 holds 10^0 to 10^16, the scales of the fractions tightRun
// reads.
var fracPow10 = [17]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}

// float32Pow10 holds the powers of ten float32 represents exactly.
var float32Pow10 = [11]float32{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// float64NegPow10 holds the float64 values nearest 10^0 to 10^-16.
var float64NegPow10 = [17]float64{1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16}

// tightRun decodes, from b[i:], the elements written the way encoders
// write float data, one after another in one loop: no whitespace, each
// -?(0|[1-9][0-9]{0,6})(\.[0-9]{1,15})? (at most 19 digits) followed at
// once by ',' or ']'. It stops when out holds n, after the closing ']'
// (closed), or before an element of any other form or whose float64 lands
// on a float32 midpoint, and returns the index it stopped at: the caller
// goes on from there. Each element takes two or three word loads and no
// loop (digitRun), within tightSlack bytes of its start; its value is
// parseFloatFast's, bit for bit (a mantissa below 2^53 scaled by an exact
// power of ten, one correctly rounded division). FP32 takes a mantissa
// below 2^24 over at most 10 fraction digits in float32 (Clinger's fast
// path there: both operands exact, one rounding); past that a product by
// the float64 nearest 10^-k stands in for the float64 division: it is
// within 3 ulps of the quotient, so unless it lies within 4 of a float32
// midpoint both round to the same float32 (else the division decides).
func tightRun[T float32 | float64](b []byte, i int, out []T, n int) ([]T, int, bool) {
	_, f32 := any(out).([]float32)
	for len(out) < n && len(b)-i >= tightSlack {
		w := b[i : i+tightSlack]
		j := 0
		neg := w[0] == '-'
		if neg {
			j = 1
		}
		var mant uint64
		nd := 0
		if w[j] == '0' {
			j++
		} else {
			k, v := digitRun(binary.LittleEndian.Uint64(w[j:]))
			if k == 0 || k == 8 {
				break
			}
			j += k
			mant, nd = v, k
		}
		nf := 0
		if w[j] == '.' {
			j++
			k, v := digitRun(binary.LittleEndian.Uint64(w[j:]))
			if k == 8 {
				k2, v2 := digitRun(binary.LittleEndian.Uint64(w[j+8:]))
				if k2 == 8 {
					break
				}
				k, v = 8+k2, v*fracPow10[k2]+v2
			}
			if k == 0 || nd+k > 19 {
				break
			}
			j += k
			nf = k
			mant = mant*fracPow10[k] + v
		}
		c := w[j]
		if c != ',' && c != ']' || mant >= 1<<53 {
			break
		}
		if f32 && mant < 1<<24 && nf <= 10 {
			// Clinger's fast path in float32 itself: the mantissa
			// and 10^nf are exact, one division rounds once.
			g := float32(mant) / float32Pow10[nf]
			if neg {
				g = -g
			}
			out = append(out, T(g))
			i += j + 1
			if c == ']' {
				return out, i, true
			}
			continue
		}
		var f float64
		if f32 {
			f = float64(mant) * float64NegPow10[nf]
		}
		if !f32 || math.Float64bits(f)&(1<<29-1)-(1<<28-4) <= 8 {
			if f = float64(mant) / float64Pow10[nf]; float32Midpoint(f) {
				break
			}
		}
		if neg {
			f = -f // -0 for a zero mantissa, as parseFloatFast gives
		}
		out = append(out, T(f))
		i += j + 1
		if c == ']' {
			return out, i, true
		}
	}
	return out, i, false
}
