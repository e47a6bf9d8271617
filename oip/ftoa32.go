package oip

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"slices"
)

// appendFloat32 appends the shortest decimal that reads back as f, byte
// for byte as strconv.AppendFloat(b, float64(f), 'g', -1, 32) writes it
// (exponent form below 1e-4 and from 1e6 on), for a finite f. A JSON
// answer of float32 values is mostly this call: strconv's general path
// (its digit search, then a decimal buffer formatted by the verb) took
// ~50 ns a value, 40% of the server's CPU answering a 4,096-value
// output; this one searches the digits as strconv does (the shortest
// decimal in the value's rounding interval, the nearest of them) and
// writes them in one pass (22 ns a value against strconv's 52,
// BenchmarkAppendFloat32).
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
	n := len(b)
	b = slices.Grow(b, float32Room)[:n+float32Room]
	return b[:n+putFloat32((*[float32Room]byte)(b[n:]), f)]
}

// float32Room is the room putFloat32 writes in: a float32's longest
// decimal is 15 bytes (-1.23456789e-38), and the digits move as two
// 8-byte words stored from as far as its 11th byte.
const float32Room = 32

// putFloat32 writes appendFloat32's decimal of f at the start of d and
// returns its length; the bytes of d after it are left undefined. The
// digits come out of one pass of multiplications (eight at once in a
// word) and move as words, so a value costs few branches beyond the
// ones its layout needs.
func putFloat32(d *[float32Room]byte, f float32) int {
	u := math.Float32bits(f)
	d[0] = '-'
	i := int(u >> 31)
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
		d[i] = '0'
		return i + 1
	default:
		digits, exp = schubfach32(-149, uint64(frac))
	}
	for digits%10 == 0 {
		digits /= 10
		exp++
	}
	// The digits (at most nine) as ASCII in the 16 bytes of lo and hi,
	// little-endian, the first digit in lo's lowest byte, zero bytes
	// after the last: built in registers and stored as words. (Stored
	// byte and word apart and loaded back as words from where they meet,
	// they missed the store-to-load forwarding: a sixth of the function's
	// time went to that stall.)
	nd := decimalLen(uint32(digits))
	top := digits / 1e8
	eight := eightDigits(uint32(digits - top*1e8))
	var lo, hi uint64
	if nd == 9 {
		lo, hi = '0'+top|eight<<8, eight>>56
	} else {
		lo = eight >> (8 * (8 - nd))
	}
	// dp is the decimal point's place after the first dp digits: strconv's
	// 'g' writes ddd.ddd when the first digit's exponent dp-1 lies in
	// [-4, 6), d.ddde±XX otherwise.
	dp := nd + exp
	switch {
	case dp < -3 || dp > 6:
		d[i] = byte(lo)
		i++
		if nd > 1 {
			d[i] = '.'
			putWords(d[i+1:], lo, hi, 1)
			i += nd
		}
		x := dp - 1
		d[i], d[i+1] = 'e', '+'
		if x < 0 {
			d[i+1] = '-'
			x = -x
		}
		d[i+2], d[i+3] = twoDigits[2*x], twoDigits[2*x+1]
		return i + 4
	case dp <= 0:
		le.PutUint64(d[i:], zeroPoint)
		i += 2 - dp
		putWords(d[i:], lo, hi, 0)
		return i + nd
	case dp < nd:
		putWords(d[i:], lo, hi, 0)
		d[i+dp] = '.'
		putWords(d[i+dp+1:], lo, hi, dp)
		return i + nd + 1
	default:
		putWords(d[i:], lo, hi, 0)
		le.PutUint64(d[i+nd:], zeros)
		return i + dp
	}
}

var le = binary.LittleEndian

// zeroPoint is "0.000000" and zeros "00000000" as little-endian words.
const (
	zeroPoint = 0x3030303030302e30
	zeros     = 0x3030303030303030
)

// putWords stores at dst's start the 16 bytes of lo and hi (little-endian,
// lo first) from byte skip on (0 <= skip <= 8), as two words.
func putWords(dst []byte, lo, hi uint64, skip int) {
	n := uint(8 * skip)
	le.PutUint64(dst, lo>>n|hi<<(64-n))
	le.PutUint64(dst[8:], hi>>n)
}

// eightDigits returns v < 10^8 as eight ASCII digits, zero-padded, in a
// little-endian word (the first digit in its lowest byte): the two halves
// of four digits in 32-bit lanes, each split by 100 into 16-bit lanes and
// each of those by 10 into bytes, all by multiplying by reciprocals that
// are exact over the lanes' ranges.
func eightDigits(v uint32) uint64 {
	x := uint64(v/10000) | uint64(v%10000)<<32
	hundreds := (x * 10486 >> 20) & 0x0000007F0000007F // lane/100, lane < 10^4
	x = hundreds | (x-100*hundreds)<<16
	tens := (x * 103 >> 10) & 0x000F000F000F000F // lane/10, lane < 100
	x = tens | (x-10*tens)<<8
	return x + zeros
}

// decimalLen returns the number of decimal digits of v > 0.
func decimalLen(v uint32) int {
	t := bits.Len32(v) * 1233 >> 12 // ⌊log10 v⌋ or one more
	if v < pow10u32[t] {
		return t
	}
	return t + 1
}

var pow10u32 = [...]uint32{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

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
