package oip

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// numLit is a scanned JSON number: value = ±mant × 10^exp10, exactly,
// unless trunc says significant digits beyond the 19th were dropped.
type numLit struct {
	mant  uint64
	exp10 int
	neg   bool
	trunc bool
	lit   []byte // the literal, for the slow paths
}

// float64Pow10 holds the powers of ten that float64 represents exactly.
var float64Pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// fast returns the value when Clinger's fast path applies: mant and
// 10^|exp10| are exact in float64, so one multiply or divide gives the
// correctly rounded float64. Rounding that to float32 is correct too
// unless it is a float32 midpoint (see float32Midpoint).
func (n *numLit) fast() (float64, bool) {
	if n.trunc {
		return 0, false
	}
	if n.mant == 0 {
		if n.neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	if n.mant >= 1<<53 || n.exp10 < -22 || n.exp10 > 22 {
		return 0, false
	}
	f := float64(n.mant)
	if n.exp10 < 0 {
		f /= float64Pow10[-n.exp10]
	} else {
		f *= float64Pow10[n.exp10]
	}
	if n.neg {
		f = -f
	}
	return f, true
}

// float returns n rounded to a float of the given bit size (32 or 64).
// Fast-path values are at most 2^53·10^22 < MaxFloat32 in magnitude and at
// least 10^-22, so they are always normal float32 values.
func (n *numLit) float(bits int) (float64, error) {
	if f, ok := n.fast(); ok && (bits == 64 || !float32Midpoint(f)) {
		return f, nil
	}
	f, err := strconv.ParseFloat(string(n.lit), bits)
	if err != nil {
		return 0, errRange
	}
	return f, nil
}

// integer returns the exact integer value of n as sign and magnitude, or an
// error when n has a fractional part or exceeds 2^64-1 in magnitude.
func (n *numLit) integer() (neg bool, mag uint64, err error) {
	if n.trunc {
		return n.integerSlow()
	}
	mag = n.mant
	if mag == 0 {
		return false, 0, nil
	}
	e := n.exp10
	for ; e < 0; e++ {
		if mag%10 != 0 {
			return false, 0, errNotInteger
		}
		mag /= 10
	}
	for ; e > 0; e-- {
		if mag > math.MaxUint64/10 {
			return false, 0, errRange
		}
		mag *= 10
	}
	return n.neg, mag, nil
}

// integerSlow handles literals with more than 19 significant digits.
func (n *numLit) integerSlow() (bool, uint64, error) {
	if u, err := strconv.ParseUint(string(n.lit), 10, 64); err == nil {
		return false, u, nil
	}
	if len(n.lit) > 0 && n.lit[0] == '-' {
		if u, err := strconv.ParseUint(string(n.lit[1:]), 10, 64); err == nil {
			return true, u, nil
		}
	}
	// More than 19 significant digits means a magnitude of at least 1e18
	// times 10^exp10: bound the exponent before big arithmetic.
	if n.exp10 > 2 {
		return false, 0, errRange
	}
	if n.exp10 < -400 {
		return false, 0, errNotInteger
	}
	r, ok := new(big.Rat).SetString(string(n.lit))
	if !ok {
		return false, 0, errNotInteger
	}
	if !r.IsInt() {
		return false, 0, errNotInteger
	}
	num := r.Num()
	neg := num.Sign() < 0
	num.Abs(num)
	if !num.IsUint64() {
		return false, 0, errRange
	}
	return neg, num.Uint64(), nil
}

// toInt checks an integer magnitude against [lo, hi] and returns it signed.
func toInt(neg bool, mag uint64, lo int64, hi uint64) (int64, error) {
	if neg {
		if mag > uint64(-(lo+1))+1 {
			return 0, errRange
		}
		if mag == 0 {
			return 0, nil
		}
		return -int64(mag-1) - 1, nil
	}
	if mag > hi {
		return 0, errRange
	}
	return int64(mag), nil
}

// parseFloatFast parses the JSON number at b[i:] when it has at most 19
// digits and Clinger's fast path applies, reading digits up to eight at a
// time. ok is false for anything else (the caller then takes the general
// path from i, which also reports syntax errors). f is the correctly
// rounded float64: see float32Midpoint for rounding it on to float32.
func parseFloatFast(b []byte, i int) (f float64, end int, ok bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return 0, 0, false
	}
	var mant uint64
	nd := 0
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		start := i
		i, mant = digitRuns(b, i, 0)
		nd = i - start
	default:
		return 0, 0, false
	}
	exp := 0
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		i, mant = digitRuns(b, i, mant)
		nf := i - start
		if nf == 0 {
			return 0, 0, false
		}
		nd += nf
		exp = -nf
	}
	if nd > 19 {
		return 0, 0, false
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i >= len(b) || b[i]-'0' >= 10 {
			return 0, 0, false
		}
		e := 0
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if mant == 0 {
		if neg {
			return math.Copysign(0, -1), i, true
		}
		return 0, i, true
	}
	if mant >= 1<<53 || exp < -22 || exp > 22 {
		return 0, 0, false
	}
	f = float64(mant)
	if exp < 0 {
		f /= float64Pow10[-exp]
	} else {
		f *= float64Pow10[exp]
	}
	if neg {
		f = -f
	}
	return f, i, true
}

// float32Midpoint reports whether f, a float64 of normal float32
// magnitude, lies exactly halfway between two float32 neighbours: the 29
// bits float64 carries beyond float32 read 1<<28. When f is the correctly
// rounded float64 of a decimal x, float32(f) is x's correctly rounded
// float32 unless f is such a midpoint: f is never further from x than a
// midpoint between them (a midpoint is itself a float64), so only f landing
// on one can turn the float32 rounding (ties to even there) the wrong way.
func float32Midpoint(f float64) bool {
	return math.Float64bits(f)&(1<<29-1) == 1<<28
}

// uint64Pow10 holds 10^0 to 10^8.
var uint64Pow10 = [9]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// digitRuns reads the ASCII digits at b[i:] into mant (mant·10^k + their
// value, modulo 2^64 past 19 digits: the caller counts them) and returns
// the index after them. Eight bytes are looked at a time while eight
// remain.
func digitRuns(b []byte, i int, mant uint64) (int, uint64) {
	for len(b)-i >= 8 {
		k, v := digitRun(binary.LittleEndian.Uint64(b[i:]))
		mant = mant*uint64Pow10[k] + v
		i += k
		if k < 8 {
			return i, mant
		}
	}
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	return i, mant
}

// digitRun returns how many of the eight bytes of v (little-endian: the
// first byte lowest) are ASCII digits before the first that is not, and
// the number those digits write. A byte is a digit when its high nibble is
// 3 both before and after adding 6; the sum carries out of a byte only
// from a byte above 0xF9, never from a digit, so no byte before the first
// non-digit is misread. Shifting the digits to the top of the word puts
// zeros (leading zeros, valueless) in front of them; the multiplies then
// combine the eight digit bytes pairwise into one number (first digit
// most significant).
func digitRun(v uint64) (k int, val uint64) {
	t := (v & 0xF0F0F0F0F0F0F0F0) | (((v + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)
	k = bits.TrailingZeros64(t^0x3333333333333333) >> 3
	w := (v - 0x3030303030303030) << (8 * (8 - k) & 63)
	if k == 0 {
		w = 0
	}
	w = w*10 + w>>8
	w = ((w&0x000000FF000000FF)*(100+(1000000<<32)) + (w>>16&0x000000FF000000FF)*(1+(10000<<32))) >> 32
	return k, w
}

// cmpLiteral compares the exact value of a JSON number literal with f (a
// finite float64) and returns -1, 0 or +1. It walks the literal's digits
// once, so it costs no more than reading it, however long.
func cmpLiteral(lit []byte, f float64) int {
	neg := len(lit) > 0 && lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	// The literal's significant digits and decimal exponent: value =
	// 0.d1d2d3... × 10^point.
	var digits []byte
	point, exp := 0, 0
	i := 0
	seenPoint := false
	for ; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c == '.':
			seenPoint = true
		case c >= '0' && c <= '9':
			if len(digits) == 0 && c == '0' {
				if seenPoint {
					point--
				}
				continue
			}
			digits = append(digits, c)
			if !seenPoint {
				point++
			}
		default:
			goto exponent
		}
	}
exponent:
	if i < len(lit) { // e or E
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if exp < 1<<30 {
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	point += exp
	// f's exact decimal expansion, likewise.
	fneg := math.Signbit(f)
	fd, fpoint := exactDecimal(math.Abs(f))
	sign := 1
	switch {
	case len(digits) == 0 && len(fd) == 0:
		return 0
	case neg != fneg && (len(digits) > 0 || len(fd) > 0):
		if neg {
			return -1
		}
		return 1
	}
	if neg {
		sign = -1
	}
	switch {
	case len(digits) == 0:
		return -sign
	case len(fd) == 0:
		return sign
	case point != fpoint:
		if point > fpoint {
			return sign
		}
		return -sign
	}
	for k := 0; k < max(len(digits), len(fd)); k++ {
		var a, b byte = '0', '0'
		if k < len(digits) {
			a = digits[k]
		}
		if k < len(fd) {
			b = fd[k]
		}
		if a != b {
			if a > b {
				return sign
			}
			return -sign
		}
	}
	return 0
}

// exactDecimal returns the significant digits of f ≥ 0 (exact: every
// float64 has a finite decimal expansion) and its decimal point position,
// as cmpLiteral represents numbers.
func exactDecimal(f float64) ([]byte, int) {
	if f == 0 {
		return nil, 0
	}
	// 1100 digits hold every float64's expansion in full.
	s := new(big.Float).SetFloat64(f).Text('e', 1100)
	mant, e, _ := strings.Cut(s, "e")
	x, _ := strconv.Atoi(e)
	d := []byte(strings.Replace(mant, ".", "", 1))
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	return d, x + 1
}
