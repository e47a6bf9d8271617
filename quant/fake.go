package quant

import "math"

// FakeQuant is a per-tensor QuantizeLinear -> DequantizeLinear pair of
// float32 values through INT8 or UINT8 (what static QDQ quantizers put
// after every quantized activation), computed in one pass, each step the
// same float operation as the two ONNX operators:
//
//	r = clamp(roundEven(float64(x / qs)) + qz, lo, hi)   (as QuantizeLinear)
//	q = the integer type's conversion of r                (as its Cast)
//	y = float32(float64(q) - dz) · ds                     (as DequantizeLinear)
//
// so Apply's output is the pair's bit for bit; the 256 possible y are
// tabulated by NewFakeQuant.
type FakeQuant struct {
	scale  float32
	zp     float32 // the quantize zero point, an integer
	lo, hi float32 // the integer type's range
	table  [256]float32
	nanTo  int // the table index a NaN lands on
}

// NewFakeQuant returns the pair with quantize scale qs and zero point qz,
// dequantize scale ds and zero point dz, through INT8 when signed and
// UINT8 otherwise. The zero points are integers of that type.
func NewFakeQuant(qs float32, qz float64, ds float32, dz float64, signed bool) *FakeQuant {
	lo, hi := 0.0, float64(math.MaxUint8)
	if signed {
		lo, hi = math.MinInt8, math.MaxInt8
	}
	f := &FakeQuant{scale: qs, zp: float32(qz), lo: float32(lo), hi: float32(hi)}
	for i := range f.table {
		f.table[i] = float32(float64(int(lo)+i)-dz) * ds
	}
	nan := math.NaN()
	if signed {
		f.nanTo = int(int8(nan)) - int(lo)
	} else {
		f.nanTo = int(uint8(nan)) - int(lo)
	}
	return f
}

// Apply computes dst[i] from src[i] (dst may be src). x/qs is
// QuantizeLinear's own float32 division. Below 2^21 in magnitude, adding
// 1.5·2^23 rounds it to an integer half to even, as roundEven does, and
// leaves that integer in the low bits, which are then clamped to [lo -
// qz, hi - qz]; larger quotients and infinities clamp alike, and NaN
// lands where the integer conversion puts it.
func (f *FakeQuant) Apply(dst, src []float32) {
	dst = dst[:len(src)]
	s := f.scale
	ka, kb := int32(f.lo-f.zp), int32(f.hi-f.zp)
	tb := &f.table
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s4 := src[i : i+4 : i+4]
		t0, t1, t2, t3 := s4[0]/s, s4[1]/s, s4[2]/s, s4[3]/s
		if !(t0 < 0x1p21 && t0 > -0x1p21 && t1 < 0x1p21 && t1 > -0x1p21 && t2 < 0x1p21 && t2 > -0x1p21 && t3 < 0x1p21 && t3 > -0x1p21) {
			d4 := dst[i : i+4 : i+4]
			d4[0], d4[1], d4[2], d4[3] = f.one(t0), f.one(t1), f.one(t2), f.one(t3)
			continue
		}
		k0 := int32(math.Float32bits(t0+fakeMagic)) - fakeMagicBits
		k1 := int32(math.Float32bits(t1+fakeMagic)) - fakeMagicBits
		k2 := int32(math.Float32bits(t2+fakeMagic)) - fakeMagicBits
		k3 := int32(math.Float32bits(t3+fakeMagic)) - fakeMagicBits
		d4 := dst[i : i+4 : i+4]
		d4[0] = tb[uint8(min(max(k0, ka), kb)-ka)]
		d4[1] = tb[uint8(min(max(k1, ka), kb)-ka)]
		d4[2] = tb[uint8(min(max(k2, ka), kb)-ka)]
		d4[3] = tb[uint8(min(max(k3, ka), kb)-ka)]
	}
	for ; i < len(src); i++ {
		dst[i] = f.one(src[i] / s)
	}
}

// Value returns the pair's y for one x, as Apply computes it.
func (f *FakeQuant) Value(x float32) float32 { return f.one(x / f.scale) }

// one returns y for the quotient t = x/qs.
func (f *FakeQuant) one(t float32) float32 {
	if !(t < 0x1p21 && t > -0x1p21) {
		return f.far(t)
	}
	k := int32(math.Float32bits(t+fakeMagic)) - fakeMagicBits
	ka, kb := int32(f.lo-f.zp), int32(f.hi-f.zp)
	return f.table[uint8(min(max(k, ka), kb)-ka)]
}

// Rounding by addition: for |t| < 2^22, t + fakeMagic is fakeMagic +
// roundEven(t) exactly, whose bits are fakeMagicBits + roundEven(t).
const (
	fakeMagic     = 0x1.8p23
	fakeMagicBits = 0x4B400000
)

// far returns the value of a quotient beyond ±2^21: a bound, or NaN's.
func (f *FakeQuant) far(t float32) float32 {
	switch {
	case t > 0:
		return f.table[255]
	case t < 0:
		return f.table[0]
	}
	return f.table[f.nanTo]
}
