package oip

import (
	"encoding/binary"
	"math"
	"math/big"
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
// correctly rounded float64. Rounding that to float32 is also correct
// (53 >= 2·24+2, so double rounding is harmless for one operation).
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
	if f, ok := n.fast(); ok {
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
// digits and Clinger's fast path applies, reading fraction digits eight at
// a time. ok is false for anything else (the caller then takes the general
// path from i, which also reports syntax errors).
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
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			mant = mant*10 + uint64(b[i]-'0')
			nd++
		}
	default:
		return 0, 0, false
	}
	exp := 0
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for len(b)-i >= 8 {
			v := binary.LittleEndian.Uint64(b[i:])
			if !eightDigits(v) {
				break
			}
			mant = mant*1e8 + eightDigitsValue(v)
			i += 8
		}
		for ; i < len(b) && b[i]-'0' < 10; i++ {
			mant = mant*10 + uint64(b[i]-'0')
		}
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

// eightDigits reports whether the eight bytes of v (little-endian) are all
// ASCII digits.
func eightDigits(v uint64) bool {
	return (v&0xF0F0F0F0F0F0F0F0)|(((v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4) == 0x3333333333333333
}

// eightDigitsValue returns the number written by eight ASCII digits packed
// little-endian in v (first digit in the low byte).
func eightDigitsValue(v uint64) uint64 {
	v -= 0x3030303030303030
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+(1000000<<32)) + (v>>16&0x000000FF000000FF)*(1+(10000<<32))) >> 32
	return v
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
