//go:build gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Kernels of the convolution paths (kernels/conv.go is the spec), 8
// values at a time, lane by lane with the references' operations in
// their order: separate multiplies and adds (FMUL then FADD), except
// ConvTaps, whose FMLA fuses each tap's multiply-add as its reference
// allows.

// func convFinishNEON(dst, bias, res []float32, lo, hi float32)
//
// len(dst) is a positive multiple of 8; bias and res are empty or as
// long as dst:
//
//	v := dst[i] + bias[i] + res[i]
//	if lo > v { v = lo }
//	if hi < v { v = hi }
TEXT ·convFinishNEON(SB), NOSPLIT, $0-80
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R3
	MOVD  bias_base+24(FP), R4
	MOVD  bias_len+32(FP), R5
	MOVD  res_base+48(FP), R6
	MOVD  res_len+56(FP), R7
	FMOVS lo+72(FP), F6
	VDUP  V6.S[0], V6.S4
	FMOVS hi+76(FP), F7
	VDUP  V7.S[0], V7.S4
	MOVD  R0, R1

finloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	CBZ    R5, finnobias
	VLD1.P 32(R4), [V2.S4, V3.S4]
	V_FADD(0, 0, 2)
	V_FADD(1, 1, 3)

finnobias:
	CBZ    R7, finclamp
	VLD1.P 32(R6), [V4.S4, V5.S4]
	V_FADD(0, 0, 4)
	V_FADD(1, 1, 5)

finclamp:
	CLAMP(0, 6, 7, 8)
	CLAMP(1, 6, 7, 9)
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, finloop
	RET

// func convHardNEON(dst []float32, a, b, lo, hi, d float32, mode int)
//
// len(dst) is a positive multiple of 8; mode is kernels.HardT (0),
// HardXT (1), HardXTDiv (2) or HardXTMul (3). With x := dst[i]:
//
//	t := x·a + b (FMUL, FADD)
//	if lo > t { t = lo }
//	if hi < t { t = hi }
//	dst[i] = t, x·t, x·t/d or x·t·d
TEXT ·convHardNEON(SB), NOSPLIT, $0-56
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R3
	FMOVS a+24(FP), F16
	VDUP  V16.S[0], V16.S4
	FMOVS b+28(FP), F17
	VDUP  V17.S[0], V17.S4
	FMOVS lo+32(FP), F18
	VDUP  V18.S[0], V18.S4
	FMOVS hi+36(FP), F19
	VDUP  V19.S[0], V19.S4
	FMOVS d+40(FP), F20
	VDUP  V20.S[0], V20.S4
	MOVD  mode+48(FP), R7
	MOVD  R0, R1

hardloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	V_FMUL(2, 0, 16)
	V_FADD(2, 2, 17)
	V_FMUL(3, 1, 16)
	V_FADD(3, 3, 17)
	CLAMP(2, 18, 19, 4)
	CLAMP(3, 18, 19, 5)
	CBZ    R7, hardstore
	V_FMUL(2, 0, 2)    // x·t
	V_FMUL(3, 1, 3)
	CMP    $1, R7
	BEQ    hardstore
	CMP    $2, R7
	BNE    hardmul
	V_FDIV(2, 2, 20)   // x·t/d
	V_FDIV(3, 3, 20)
	B      hardstore

hardmul:
	V_FMUL(2, 2, 20)   // x·t·d
	V_FMUL(3, 3, 20)

hardstore:
	VST1.P [V2.S4, V3.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, hardloop
	RET

// func mulNEON(dst, s []float32)
//
// len(dst) is a positive multiple of 8, len(s) >= len(dst):
// dst[i] *= s[i].
TEXT ·mulNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R3
	MOVD s_base+24(FP), R4
	MOVD R0, R1

mulloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R4), [V2.S4, V3.S4]
	V_FMUL(0, 0, 2)
	V_FMUL(1, 1, 3)
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, mulloop
	RET

// func convTapsNEON(dst, src, w []float32, step int)
//
// len(dst) is a positive multiple of 8, len(w) > 0, len(src) >=
// len(dst) + (len(w)-1)·step. For each 8 values of dst, in registers,
// the taps in order: dst[i] = FMA(w[j], src[i + j·step], dst[i]).
TEXT ·convTapsNEON(SB), NOSPLIT, $0-80
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R3
	MOVD src_base+24(FP), R4
	MOVD w_base+48(FP), R5
	MOVD w_len+56(FP), R6
	MOVD step+72(FP), R7
	LSL  $2, R7, R7        // step in bytes

tapsrow:
	VLD1 (R0), [V0.S4, V1.S4]
	MOVD R4, R8            // src at tap j
	MOVD R5, R9            // w[j]
	MOVD R6, R10           // taps left

tapsloop:
	VLD1R.P 4(R9), [V4.S4]
	VLD1    (R8), [V2.S4, V3.S4]
	VFMLA   V4.S4, V2.S4, V0.S4
	VFMLA   V4.S4, V3.S4, V1.S4
	ADD     R7, R8, R8
	SUB     $1, R10
	CBNZ    R10, tapsloop

	VST1.P [V0.S4, V1.S4], 32(R0)
	ADD    $32, R4
	SUB    $8, R3
	CBNZ   R3, tapsrow
	RET
