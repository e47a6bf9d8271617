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

// F16From returns f rounded to the nearest binary16 value, ties to
// even; values beyond the largest finite binary16 become ±Inf, NaN stays
// NaN.
func F16From(f float32) F16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return F16(sign | 0x7e00 | uint16(man>>13)) // quiet NaN, payload kept where it fits
		}
		return F16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return F16(sign | 0x7c00)
	}
	if e <= 0 {
		// subnormal or zero in binary16: shift the full significand.
		if e < -10 {
			return F16(sign)
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := m & (1<<shift - 1)
		q := m >> shift
		if rest > half || (rest == half && q&1 == 1) {
			q++
		}
		return F16(sign | uint16(q))
	}
	q := uint32(e)<<10 | man>>13
	rest := man & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && q&1 == 1) {
		q++ // may carry into the exponent, up to Inf: still correct
	}
	return F16(sign | uint16(q))
}

// Float32 returns h as a float32 (exactly).
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16From returns f rounded to the nearest bfloat16, ties to even;
// NaN stays NaN.
func BF16From(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

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
