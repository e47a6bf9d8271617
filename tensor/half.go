package tensor

import "math"

// F16 is an IEEE 754 binary16 value, stored as its bits. Tensors of
// type FP16 (DataType Float16) hold []F16; arithmetic converts to float32 first.
type F16 uint16

// BF16 is a bfloat16 value (the top half of a float32), stored as its
// bits. Tensors of type BF16 hold []BF16.
type BF16 uint16

// Float32 returns h as a float32 (exactly: every binary16 value is one).
func (h F16) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch exp {
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: man·2^-24
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F16From returns f rounded to the nearest binary16 value, ties to even;
// values beyond the largest finite binary16 become ±Inf, NaN stays NaN.
func F16From(f float32) F16 { return F16FromFloat64(float64(f)) }

// F16FromFloat64 rounds f to binary16 directly (not through float32, which
// would round twice).
func F16FromFloat64(f float64) F16 { return F16(roundFloat64(f, 5, 10)) }

// roundFloat64 rounds f to the nearest value of a binary format with
// expBits exponent and manBits fraction bits (IEEE layout, with
// subnormals), ties to even, and returns its bits. Overflow gives ±Inf; a
// NaN gives a quiet NaN.
func roundFloat64(f float64, expBits, manBits uint) uint64 {
	b := math.Float64bits(f)
	sign := b >> 63 << (expBits + manBits)
	exp := int64(b>>52) & 0x7ff
	man := b & (1<<52 - 1)
	maxExp := int64(1)<<expBits - 1
	inf := uint64(maxExp) << manBits
	if exp == 0x7ff {
		if man != 0 {
			return sign | inf | 1<<(manBits-1)
		}
		return sign | inf
	}
	if exp == 0 && man == 0 {
		return sign
	}
	bias := maxExp >> 1
	e := exp - 1023 + bias // the biased exponent in the target format
	sig := man | 1<<52     // float64 subnormals are far below every target's range
	if exp == 0 {
		sig = man
		e = 1 - 1023 + bias
	}
	shift := int64(52 - manBits)
	if e <= 0 {
		shift += 1 - e // subnormal in the target: fewer fraction bits
		e = 0
	}
	if shift > 62 {
		return sign // rounds to zero
	}
	q := sig >> shift
	rest := sig & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	// q holds the significand with its implicit bit (for normals); adding
	// the exponent field this way carries correctly into the next binade
	// and up to Inf.
	var bits uint64
	if e == 0 {
		bits = q // subnormal, or rounded up into the smallest normal
	} else {
		bits = uint64(e-1)<<manBits + q
	}
	if bits >= inf {
		return sign | inf
	}
	return sign | bits
}

// Float32 returns h as a float32 (exactly).
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16From returns f rounded to the nearest bfloat16, ties to even;
// NaN stays NaN.
func BF16From(f float32) BF16 { return BF16FromFloat64(float64(f)) }

// BF16FromFloat64 rounds f to bfloat16 directly.
func BF16FromFloat64(f float64) BF16 { return BF16(roundFloat64(f, 8, 7)) }

// HalfToFloat32 converts FP16 or BF16 elements to float32.
func HalfToFloat32[H F16 | BF16](h []H) []float32 {
	out := make([]float32, len(h))
	switch d := any(h).(type) {
	case []F16:
		for i, v := range d {
			out[i] = v.Float32()
		}
	case []BF16:
		for i, v := range d {
			out[i] = v.Float32()
		}
	}
	return out
}

// Float32ToHalf rounds float32 elements to FP16 or BF16.
func Float32ToHalf[H F16 | BF16](f []float32) []H {
	out := make([]H, len(f))
	switch d := any(out).(type) {
	case []F16:
		for i, v := range f {
			d[i] = F16From(v)
		}
	case []BF16:
		for i, v := range f {
			d[i] = BF16From(v)
		}
	}
	return out
}
