//go:build gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// A quantize-dequantize pair in one pass (kernels/fakequant.go is the
// spec), 8 values at a time, lane by lane with the reference's float32
// operations in its order: FDIV, FADD twice, then for the pair the
// clamp's two ifs (CLAMP: FCMGT and BIT, so equal zeros keep the
// reference's choice) and FMUL; for the table's index FCMGT #0 and AND
// (NaN to 0), FMIN, FCVTZU and one load per value. Each block of 8 is
// checked finite before any of it is stored, so the kernels stop at the
// start of the block holding the first value that is not, with nothing
// of that block written.

// Instructions neon_arm64.h does not hold, destination first.
#define FQ_ORR(d, n, m) WORD $(0x4ea01c00|((m)<<16)|((n)<<5)|(d))    // ORR Vd.16B: n | m
#define FQ_FCVTZU(d, n) WORD $(0x6ea1b800|((n)<<5)|(d))               // FCVTZU Vd.4S: float to uint32, truncated
#define FQ_FCMGTZ(d, n) WORD $(0x4ea0c800|((n)<<5)|(d))               // FCMGT #0: all ones where n > 0 (false for NaN)
#define FQ_FMIN(d, n, m) WORD $(0x4ea0f400|((m)<<16)|((n)<<5)|(d))   // FMIN Vd.4S: min(n, m)

// func fakeQuantNEON(dst, src []float32, qs, shift, lo, hi, ds float32) int
//
// For every i < len(src) (a multiple of 8), 8 at a time, while the
// block's values are finite:
//
//	u := src[i]/qs + 1.5·2^23 + shift   // FDIV, FADD, FADD
//	if lo > u { u = lo }                // CLAMP
//	if hi < u { u = hi }
//	dst[i] = u·ds                       // FMUL
//
// and returns the index it stopped at (len(src) when every value is
// finite). Register contract: R0 dst, R1 src, R2 the index, R3 len(src),
// V16 qs, V17 1.5·2^23, V18 shift, V19 lo, V20 hi, V21 ds.
TEXT ·fakeQuantNEON(SB), NOSPLIT, $0-80
	MOVD  dst_base+0(FP), R0
	MOVD  src_base+24(FP), R1
	MOVD  src_len+32(FP), R3
	FMOVS qs+48(FP), F16
	VDUP  V16.S[0], V16.S4
	FMOVS shift+52(FP), F18
	VDUP  V18.S[0], V18.S4
	FMOVS lo+56(FP), F19
	VDUP  V19.S[0], V19.S4
	FMOVS hi+60(FP), F20
	VDUP  V20.S[0], V20.S4
	FMOVS ds+64(FP), F21
	VDUP  V21.S[0], V21.S4
	MOVW  $0x4b400000, R6 // 1.5·2^23
	VDUP  R6, V17.S4
	MOVD  $0, R2

fqloop:
	CMP    R3, R2
	BEQ    fqdone
	VLD1.P 32(R1), [V0.S4, V1.S4]
	V_FSUB(2, 0, 0)        // x − x: +0, or NaN where x is not finite
	V_FSUB(3, 1, 1)
	FQ_ORR(2, 2, 3)
	VMOV   V2.D[0], R4
	VMOV   V2.D[1], R5
	ORR    R5, R4
	CBNZ   R4, fqdone      // a value of the block is not finite
	V_FDIV(0, 0, 16)       // x/qs
	V_FDIV(1, 1, 16)
	V_FADD(0, 0, 17)       // + 1.5·2^23: rounded to an integer
	V_FADD(1, 1, 17)
	V_FADD(0, 0, 18)       // + shift
	V_FADD(1, 1, 18)
	CLAMP(0, 19, 20, 2)
	CLAMP(1, 19, 20, 3)
	V_FMUL(0, 0, 21)       // ·ds
	V_FMUL(1, 1, 21)
	VST1.P [V0.S4, V1.S4], 32(R0)
	ADD    $8, R2
	B      fqloop

fqdone:
	MOVD R2, ret+72(FP)
	RET

// func fakeQuantTableNEON(dst, src []float32, qs, shift float32, lut *[256]float32) int
//
// For every i < len(src) (a multiple of 8), 8 at a time, while the
// block's values are finite:
//
//	u := src[i]/qs + 1.5·2^23 + shift   // FDIV, FADD, FADD
//	if !(u > 0) { u = 0 }               // FCMGT #0, AND: NaN to 0
//	if u > 255 { u = 255 }              // FMIN (no NaN left)
//	dst[i] = lut[uint32(u)]             // FCVTZU, then lane by lane
//
// u is then an integer in [0, 255] whatever qs is, so the loads read
// inside lut. Register contract: R0 dst, R1 src, R2 the index, R3
// len(src), R7 lut, V16 qs, V17 1.5·2^23, V18 shift, V20 255.
TEXT ·fakeQuantTableNEON(SB), NOSPLIT, $0-72
	MOVD  dst_base+0(FP), R0
	MOVD  src_base+24(FP), R1
	MOVD  src_len+32(FP), R3
	FMOVS qs+48(FP), F16
	VDUP  V16.S[0], V16.S4
	FMOVS shift+52(FP), F18
	VDUP  V18.S[0], V18.S4
	MOVD  lut+56(FP), R7
	MOVW  $0x4b400000, R6 // 1.5·2^23
	VDUP  R6, V17.S4
	MOVW  $0x437f0000, R6 // 255
	VDUP  R6, V20.S4
	MOVD  $0, R2

tbloop:
	CMP    R3, R2
	BEQ    tbdone
	VLD1.P 32(R1), [V0.S4, V1.S4]
	V_FSUB(2, 0, 0)        // x − x: +0, or NaN where x is not finite
	V_FSUB(3, 1, 1)
	FQ_ORR(2, 2, 3)
	VMOV   V2.D[0], R4
	VMOV   V2.D[1], R5
	ORR    R5, R4
	CBNZ   R4, tbdone
	V_FDIV(0, 0, 16)       // x/qs
	V_FDIV(1, 1, 16)
	V_FADD(0, 0, 17)       // + 1.5·2^23
	V_FADD(1, 1, 17)
	V_FADD(0, 0, 18)       // + shift
	V_FADD(1, 1, 18)
	FQ_FCMGTZ(2, 0)        // u > 0
	FQ_FCMGTZ(3, 1)
	V_AND(0, 0, 2)         // else +0
	V_AND(1, 1, 3)
	FQ_FMIN(0, 0, 20)      // at most 255
	FQ_FMIN(1, 1, 20)
	FQ_FCVTZU(0, 0)        // the indices
	FQ_FCVTZU(1, 1)
	VMOV   V0.S[0], R4
	MOVWU  (R7)(R4<<2), R5 // lut[index]
	MOVW.P R5, 4(R0)
	VMOV   V0.S[1], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V0.S[2], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V0.S[3], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V1.S[0], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V1.S[1], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V1.S[2], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	VMOV   V1.S[3], R4
	MOVWU  (R7)(R4<<2), R5
	MOVW.P R5, 4(R0)
	ADD    $8, R2
	B      tbloop

tbdone:
	MOVD R2, ret+64(FP)
	RET
