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
	// The one-pass kernels' constants: qz − dz − 1.5·2^23 and the bounds
	// lo − dz, hi − dz for the output; qz − lo − 1.5·2^23 for the index.
	shift, vlo, vhi, ds float32
	ishift              float32
	// scalar: qs is 0 or NaN, and a finite x/qs may be NaN (0/0): the
	// kernels would not see it, Apply runs instead.
	scalar bool
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
	f.shift, f.vlo, f.vhi, f.ds = float32(qz-dz-fakeMagic), float32(lo-dz), float32(hi-dz), ds
	f.ishift = float32(qz - lo - fakeMagic)
	f.scalar = !(qs != 0 && qs == qs)
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

// FakeQuantKernels are the kernels ApplyVector and ApplyTable run on, a
// kernel table's (dispatch.Table), each with its reference's bits and
// count:
//
//	Pair   kernels.FakeQuant: the pair's outputs, up to the first value that is not finite
//	Table  kernels.FakeQuantTable: lut[the pair's index], likewise
//
// The zero value holds none: ApplyVector and ApplyTable then run the
// scalar loop.
type FakeQuantKernels struct {
	Pair  func(dst, src []float32, qs, shift, lo, hi, ds float32) int
	Table func(dst, src []float32, qs, shift float32, lut *[256]float32) int
}

// ApplyVector computes what Apply does, bit for bit, on k.Pair, one pass
// over the values (dst may be src; otherwise they must not overlap):
//
//  1. t = x/qs, QuantizeLinear's division itself (a vector division
//     rounds as the scalar one does);
//  2. u = clamp((t + 1.5·2^23) + (qz − dz − 1.5·2^23), lo − dz, hi − dz):
//     below 2^22 in magnitude the first sum rounds t to an integer half
//     to even and the second, exact, leaves roundEven(t) + qz − dz, which
//     the integer bounds then clamp as Apply clamps roundEven(t) to [lo −
//     qz, hi − qz]; larger quotients (and infinite ones) stay beyond the
//     bound of their sign, and clamp alike;
//  3. y = u · ds: u is the integer q − dz, exactly, so y is the table's
//     float32(q − dz) · ds.
//
// The kernel stops before a value that is not finite: a NaN (or an
// infinity over an infinite qs) makes a NaN quotient, which step 2 would
// leave NaN where the pair's integer conversion gives an integer. Apply
// computes it and the values not finite right after it, and the kernel
// resumes. All of x runs through Apply when qs is 0 or NaN (a finite
// x/qs may then be NaN, 0/0). With any other qs a finite x gives a
// finite or infinite quotient, never NaN.
func (f *FakeQuant) ApplyVector(dst, src []float32, k FakeQuantKernels) {
	dst = dst[:len(src)]
	if f.scalar || k.Pair == nil {
		f.Apply(dst, src)
		return
	}
	for {
		n := k.Pair(dst, src, f.scale, f.shift, f.vlo, f.vhi, f.ds)
		if n == len(src) {
			return
		}
		src, dst = src[n:], dst[n:]
		n = nonFinite(src)
		f.Apply(dst[:n], src[:n])
		src, dst = src[n:], dst[n:]
	}
}

// nonFinite returns how many values s begins with that are not finite
// (NaN or ±Inf), at least one: s[0] is not finite.
func nonFinite(s []float32) int {
	n := 1
	for n < len(s) && math.Float32bits(s[n])&0x7f800000 == 0x7f800000 {
		n++
	}
	return n
}

// Table returns the pair's 256 outputs, by the integer's offset from the
// type's least (0 for UINT8, -128 for INT8).
func (f *FakeQuant) Table() [256]float32 { return f.table }

// ApplyTable sets dst[i] = lut[j], j the index in Table of the pair's
// output for src[i] (dst may be src; otherwise they must not overlap):
// any function of the pair's output, tabulated. It finds j on k.Table as
// ApplyVector finds the integer (steps 1 and 2, with the bounds 0 and
// 255 and the shift qz − lo − 1.5·2^23), then looks it up, in one pass;
// values that are not finite, and all of them when qs is 0 or NaN, run
// one at a time.
func (f *FakeQuant) ApplyTable(dst, src []float32, lut *[256]float32, k FakeQuantKernels) {
	dst = dst[:len(src)]
	if f.scalar || k.Table == nil {
		for i, x := range src {
			dst[i] = lut[f.index(x/f.scale)]
		}
		return
	}
	for {
		n := k.Table(dst, src, f.scale, f.ishift, lut)
		if n == len(src) {
			return
		}
		src, dst = src[n:], dst[n:]
		n = nonFinite(src)
		for i, x := range src[:n] {
			dst[i] = lut[f.index(x/f.scale)]
		}
		src, dst = src[n:], dst[n:]
	}
}

// Value returns the pair's y for one x, as Apply computes it.
func (f *FakeQuant) Value(x float32) float32 { return f.one(x / f.scale) }

// one returns y for the quotient t = x/qs.
func (f *FakeQuant) one(t float32) float32 { return f.table[f.index(t)] }

// index returns the table index of the quotient t = x/qs: the integer
// q's offset from the type's least.
func (f *FakeQuant) index(t float32) uint8 {
	if !(t < 0x1p21 && t > -0x1p21) {
		return f.far(t)
	}
	k := int32(math.Float32bits(t+fakeMagic)) - fakeMagicBits
	ka, kb := int32(f.lo-f.zp), int32(f.hi-f.zp)
	return uint8(min(max(k, ka), kb) - ka)
}

// Rounding by addition: for |t| < 2^22, t + fakeMagic is fakeMagic +
// roundEven(t) exactly, whose bits are fakeMagicBits + roundEven(t).
const (
	fakeMagic     = 0x1.8p23
	fakeMagicBits = 0x4B400000
)

// far returns the index of a quotient beyond ±2^21: a bound, or NaN's.
func (f *FakeQuant) far(t float32) uint8 {
	switch {
	case t > 0:
		return 255
	case t < 0:
		return 0
	}
	return uint8(f.nanTo)
}
