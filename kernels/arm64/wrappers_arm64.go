//go:build gc && !purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// QTile4SMULL computes a 4×16 tile of Σ (u-128)·b with widening
// multiplies. Requires ASIMD.
func QTile4SMULL(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	if kq == 0 {
		clear(acc[:64])
		return
	}
	qTile4SMULL(u[:3*ldu+4*kq], ldu, bp[:64*kq], kq, acc[:64])
}

// QTile1SMULL computes a 1×16 tile of Σ (u-128)·b. Requires ASIMD.
func QTile1SMULL(u []uint8, bp []int8, kq int, acc []int32) {
	qTile1SMULL(u[:4*kq], bp[:64*kq], kq, acc[:16])
}

// QTile4SDOT computes a 4×16 tile of Σ (u-128)·b with SDOT. Requires
// ASIMD and dotprod.
func QTile4SDOT(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	if kq == 0 {
		clear(acc[:64])
		return
	}
	qTile4SDOT(u[:3*ldu+4*kq], ldu, bp[:64*kq], kq, acc[:64])
}

// QTile1SDOT computes a 1×16 tile of Σ (u-128)·b with SDOT. Requires
// ASIMD and dotprod.
func QTile1SDOT(u []uint8, bp []int8, kq int, acc []int32) {
	qTile1SDOT(u[:4*kq], bp[:64*kq], kq, acc[:16])
}

// FTile4NEON computes kernels.FTile(4, a, lda, bp, k, c, ldc) with fused
// multiply-adds, starting from c's values when load is set. Requires ASIMD.
func FTile4NEON(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load bool) {
	if lda < 0 {
		panic("arm64: FTile4NEON: lda < 0")
	}
	fTile4NEON(a[:3*lda+k], lda, bp[:16*k], k, c[:3*ldc+16], ldc, b2i(load))
}

// FTile1NEON computes kernels.FTile(1, a, 0, bp, k, c, 0) with fused
// multiply-adds, starting from c's values when load is set. Requires ASIMD.
func FTile1NEON(a []float32, bp []float32, k int, c []float32, load bool) {
	fTile1NEON(a[:k], bp[:16*k], k, c[:16], b2i(load))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// QTile4I8MM computes kernels.QTile(4, u, ldu, bp, kq, acc) with USMMLA.
// Requires ASIMD and I8MM.
func QTile4I8MM(u []uint8, ldu int, bp []int8, kq int, acc []int32) {
	if kq == 0 {
		clear(acc[:64])
		return
	}
	qTile4I8MM(u[:3*ldu+4*kq], ldu, bp[:64*kq], kq, acc[:64])
}

// QTile1I8MM computes kernels.QTile(1, u, 0, bp, kq, acc) with USMMLA.
// Requires ASIMD and I8MM.
func QTile1I8MM(u []uint8, bp []int8, kq int, acc []int32) {
	if kq == 0 {
		clear(acc[:16])
		return
	}
	qTile1I8MM(u[:4*kq], bp[:64*kq], kq, acc[:16])
}

// MinMaxNEON returns kernels.MinMax(x). Requires ASIMD.
func MinMaxNEON(x []float32) (lo, hi float32, finite bool) {
	n := len(x) &^ 3
	if n == 0 {
		return kernels.MinMax(x)
	}
	var lanes [12]float32
	minMax4NEON(x[:n], &lanes)
	lo, hi = lanes[0], lanes[4]
	var check float32
	for i := 0; i < 4; i++ {
		lo = min(lo, lanes[i])
		hi = max(hi, lanes[4+i])
		check += lanes[8+i]
	}
	finite = check == 0
	if n < len(x) {
		tlo, thi, tfin := kernels.MinMax(x[n:])
		lo, hi, finite = min(lo, tlo), max(hi, thi), finite && tfin
	}
	return lo, hi, finite
}

// QuantizeDivU8NEON computes kernels.QuantizeDivU8(x, scale, zp, u).
// Requires ASIMD.
func QuantizeDivU8NEON(x []float32, scale float32, zp int32, u []uint8) {
	quantizeBytes(quantizeDivU8NEON, kernels.QuantizeDivU8, 255, x, scale, zp, u)
}

// QuantizeU8NEON computes kernels.QuantizeU8(x, inv, zp, u). Requires ASIMD.
func QuantizeU8NEON(x []float32, inv float32, zp int32, u []uint8) {
	quantizeBytes(quantizeU8NEON, kernels.QuantizeU8, 127, x, inv, zp, u)
}

// quantizeBytes runs a byte quantizer's kernel on the whole eights of x,
// its clamp [-zp, top-zp], and its reference ref on the rest (the same
// bits).
func quantizeBytes(kernel func(x []float32, f float32, zp int32, lo, hi float32, u []uint8), ref func(x []float32, f float32, zp int32, u []uint8),
	top int32, x []float32, f float32, zp int32, u []uint8) {
	u = u[:len(x)]
	n := len(x) &^ 7
	if n > 0 {
		kernel(x[:n], f, zp, float32(-zp), float32(top-zp), u[:n])
	}
	ref(x[n:], f, zp, u[n:])
}
