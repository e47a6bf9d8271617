package ops

import (
	"math"
)

// Exp32 returns e**x in float32, within 1 ulp of math.Exp rounded to
// float32.
func Exp32(x float32) float32 {
	if x >= expMin32 && x <= expMax32 {
		y, k := expParts32(x)
		return y * math.Float32frombits(uint32(k+127)<<23)
	}
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -103.97208:
		return 0
	}
	// 2**k alone would overflow or be subnormal: scale in two steps
	y, k := expParts32(x)
	if k > 0 {
		return y * math.Float32frombits(uint32(k-1+127)<<23) * 2
	}
	return y * math.Float32frombits(uint32(k+24+127)<<23) * (1.0 / (1 << 24))
}

const (
	expMin32 = -87.33654 // e**x is a normal float32 from here
	expMax32 = 88.37626  // and 2**round(x·log2 e) one to here (127.5·ln2)
)

// expParts32 returns y and k with e**x = y·2**k: x = k·ln2 + r with
// |r| <= ln2/2 and y = e**r = 1 + r + r²·P(r) (the Cephes expf
// polynomial). Adding 1.5·2²³ rounds x·log2(e) to the integer k, which
// the sum's low mantissa bits then hold. |x| < 2²¹.
func expParts32(x float32) (float32, int32) {
	const (
		ln2Hi = 0.693359375
		ln2Lo = -2.12194440e-4
		log2e = 1.44269504088896341
		magic = 12582912 // 1.5·2²³
	)
	t := float32(x*log2e) + magic
	k := int32(math.Float32bits(t)) - 0x4b400000
	n := t - magic
	r := x - n*ln2Hi - n*ln2Lo
	p := float32(1.9875691500e-4)*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	return p*r*r + r + 1, k
}
