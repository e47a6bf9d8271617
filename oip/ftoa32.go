package oip

import (
	"math"
	"math/big"
	"math/bits"
)

// appendFloat32 appends the shortest decimal that reads back as f, byte
// for byte as strconv.AppendFloat(b, float64(f), 'g', -1, 32) writes it
// (exponent form below 1e-4 and from 1e6 on), for a finite f. A JSON
// answer of float32 values is mostly this call: strconv's general path
// (its digit search, then a decimal buffer formatted by the verb) took
// ~50 ns a value, 40% of the server's CPU answering a 4,096-value
// output; this one searches the digits as strconv does (the shortest
// decimal in the value's rounding interval, the nearest of them) and
// writes them in one pass.
//
// The digits come from Giulietti's Schubfach method: with k chosen so
// that the interval's width scaled by 10^-k lies in [1, 10), the scaled
// value and interval ends are computed by one 64x64-bit product each
// with a 64-bit approximation of 10^-k, rounded to odd, which keeps
// every comparison with an integer the algorithm makes exact; then at
// most two candidates (a multiple of ten, else the integers on either
// side) are tested for lying in the interval. TestAppendFloat32Exhaustive
// checks every float32 against strconv.
func appendFloat32(b []byte, f float32) []byte {
	u := math.Float32bits(f)
	if u>>31 != 0 {
		b = append(b, '-')
	}
	frac := u & (1<<23 - 1)
	bexp := int(u>>23) & 0xFF
	var digits uint64
	var exp int
	switch {
	case bexp != 0:
		c := uint64(frac | 1<<23)
		if shift := 150 - bexp; shift > 0 && shift < 24 && c&(1<<shift-1) == 0 {
			// An integer below 2^24: its interval holds no other
			// integer, and no decimal with fewer digits.
			digits, exp = c>>shift, 0
		} else {
			digits, exp = schubfach32(bexp-150, c)
		}
	case frac == 0:
		return append(b, '0')
	default:
		digits, exp = schubfach32(-149, uint64(frac))
	}
	for digits%10 == 0 {
		digits /= 10
		exp++
	}
	return appendShortest(b, digits, exp)
}

// schubfach32 returns the shortest decimal digits×10^exp that rounds to
// the float32 c×2^q (c < 2^24), the nearest such when several are as
// short; on a tie, the one of an even last digit, but the upper one at
// the first value of a binade, as strconv chooses.
func schubfach32(q int, c uint64) (digits uint64, exp int) {
	out := c & 1 // an odd c excludes its interval's ends
	cb := c << 2
	cbr := cb + 2
	var cbl uint64
	var k int
	if c != 1<<23 || q == -149 {
		cbl = cb - 2
		k = floorLog10Pow2(q)
	} else {
		// The first value of a binade: the gap below is half the
		// gap above.
		cbl = cb - 1
		k = floorLog10ThreeQuartersPow2(q)
	}
	h := q + floorLog2Pow10(-k) + 33
	g := pow10Fixed[-k-pow10FixedMin]
	vb := roundToOdd(g, cb<<h)
	vbl := roundToOdd(g, cbl<<h)
	vbr := roundToOdd(g, cbr<<h)
	s := vb >> 2
	if s >= 10 { // a multiple of ten, one digit shorter, in the interval?
		sp10 := s / 10 * 10
		tp10 := sp10 + 10
		upin := vbl+out <= sp10<<2
		wpin := tp10<<2+out <= vbr
		if upin != wpin {
			if upin {
				return sp10, k
			}
			return tp10, k
		}
	}
	t := s + 1
	uin := vbl+out <= s<<2
	win := t<<2+out <= vbr
	if uin != win {
		if uin {
			return s, k
		}
		return t, k
	}
	mid := (s + t) << 1
	if vb < mid || vb == mid && s&1 == 0 && cbl == cb-2 {
		return s, k
	}
	return t, k
}

// roundToOdd returns g×cp/2^95 rounded to odd: truncated, its lowest
// bit set when anything was cut off.
func roundToOdd(g, cp uint64) uint64 {
	hi, _ := bits.Mul64(g, cp)
	return hi>>31 | (hi&(1<<32-1)+(1<<32-1))>>32
}

// floorLog10Pow2 is ⌊q·log10(2)⌋, floorLog10ThreeQuartersPow2 is
// ⌊log10(3/4·2^q)⌋ and floorLog2Pow10 is ⌊e·log2(10)⌋, in fixed point;
// exact over the float32 exponents (TestFloorLogs).
func floorLog10Pow2(q int) int { return q * 661971961083 >> 41 }

func floorLog10ThreeQuartersPow2(q int) int {
	return (q*661971961083 - 274743187321) >> 41
}

func floorLog2Pow10(e int) int { return e * 913124641741 >> 38 }

// pow10Fixed[e-pow10FixedMin] is ⌊10^e·2^-r⌋+1 for the r that puts
// 10^e·2^-r in [2^62, 2^63): 10^e with 63 bits, rounded up, for the
// exponents e = -k a float32 needs.
const pow10FixedMin, pow10FixedMax = -31, 45

var pow10Fixed = func() (t [pow10FixedMax - pow10FixedMin + 1]uint64) {
	ten := big.NewInt(10)
	for e := pow10FixedMin; e <= pow10FixedMax; e++ {
		r := floorLog2Pow10(e) - 62
		num, den := big.NewInt(1), big.NewInt(1)
		if e >= 0 {
			num.Exp(ten, big.NewInt(int64(e)), nil)
		} else {
			den.Exp(ten, big.NewInt(int64(-e)), nil)
		}
		if r >= 0 {
			den.Lsh(den, uint(r))
		} else {
			num.Lsh(num, uint(-r))
		}
		t[e-pow10FixedMin] = num.Quo(num, den).Uint64() + 1
	}
	return t
}()

// appendShortest writes digits×10^exp (digits without trailing zeros)
// as strconv's 'g' with the shortest precision does: ddd.ddd when the
// decimal exponent of the first digit lies in [-4, 6), d.ddde±XX else.
func appendShortest(b []byte, digits uint64, exp int) []byte {
	var buf [20]byte
	i := len(buf)
	for digits >= 100 {
		q := digits / 100
		r := digits - q*100
		i -= 2
		buf[i], buf[i+1] = twoDigits[2*r], twoDigits[2*r+1]
		digits = q
	}
	if digits >= 10 {
		i -= 2
		buf[i], buf[i+1] = twoDigits[2*digits], twoDigits[2*digits+1]
	} else {
		i--
		buf[i] = byte('0' + digits)
	}
	d := buf[i:]
	nd := len(d)
	dp := nd + exp // the decimal point's place after the first dp digits
	switch x := dp - 1; {
	case x < -4 || x >= 6:
		b = append(b, d[0])
		if nd > 1 {
			b = append(b, '.')
			b = append(b, d[1:]...)
		}
		b = append(b, 'e')
		if x < 0 {
			b = append(b, '-')
			x = -x
		} else {
			b = append(b, '+')
		}
		if x < 10 {
			return append(b, '0', byte('0'+x))
		}
		return append(b, twoDigits[2*x], twoDigits[2*x+1])
	case dp <= 0:
		b = append(b, '0', '.')
		for ; dp < 0; dp++ {
			b = append(b, '0')
		}
		return append(b, d...)
	case dp < nd:
		b = append(b, d[:dp]...)
		b = append(b, '.')
		return append(b, d[dp:]...)
	default:
		b = append(b, d...)
		for ; nd < dp; nd++ {
			b = append(b, '0')
		}
		return b
	}
}

const twoDigits = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"
