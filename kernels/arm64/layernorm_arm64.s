//go:build gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// func lnLanesNEON(x []float32, shift float32, a *[8]float32)
//
// Sums d = x[i] - shift and d·d (rounded, then added) over x (len(x) a
// multiple of 16) in sixteen float32 lanes each, value i to lane i mod 16
// (V0..V3: d; V4..V7: d²), then writes kernels.LayerNormLanes of each:
// a[j] = (s_j + s_j+8) + (s_j+4 + s_j+12) for d, a[4+j] for d².
//
// Register contract: R0 x, R1 values left, R2 a, V31 shift.
TEXT ·lnLanesNEON(SB), NOSPLIT, $0-40
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R1
	FMOVS shift+24(FP), F31
	VDUP  V31.S[0], V31.S4
	MOVD  a+32(FP), R2
	VEOR  V0.B16, V0.B16, V0.B16
	VEOR  V1.B16, V1.B16, V1.B16
	VEOR  V2.B16, V2.B16, V2.B16
	VEOR  V3.B16, V3.B16, V3.B16
	VEOR  V4.B16, V4.B16, V4.B16
	VEOR  V5.B16, V5.B16, V5.B16
	VEOR  V6.B16, V6.B16, V6.B16
	VEOR  V7.B16, V7.B16, V7.B16
	CBZ   R1, lanesdone

lanes16:
	VLD1.P 64(R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	V_FSUB(16, 16, 31) // d = x - shift
	V_FSUB(17, 17, 31)
	V_FSUB(18, 18, 31)
	V_FSUB(19, 19, 31)
	V_FADD(0, 0, 16)
	V_FADD(1, 1, 17)
	V_FADD(2, 2, 18)
	V_FADD(3, 3, 19)
	V_FMUL(20, 16, 16) // d·d, rounded
	V_FMUL(21, 17, 17)
	V_FMUL(22, 18, 18)
	V_FMUL(23, 19, 19)
	V_FADD(4, 4, 20)
	V_FADD(5, 5, 21)
	V_FADD(6, 6, 22)
	V_FADD(7, 7, 23)
	SUB    $16, R1
	CBNZ   R1, lanes16

lanesdone:
	V_FADD(0, 0, 2) // b_j = s_j + s_j+8
	V_FADD(1, 1, 3)
	V_FADD(0, 0, 1) // a_j = b_j + b_j+4
	V_FADD(4, 4, 6)
	V_FADD(5, 5, 7)
	V_FADD(4, 4, 5)
	VORR   V4.B16, V4.B16, V1.B16 // the d² lanes beside the d lanes
	VST1   [V0.S4, V1.S4], (R2)
	RET

// func lnApplyNEON(y, x, scale, bias []float32, mean, inv float32)
//
// For every i < len(y) (a multiple of 8), 8 at a time:
// y[i] = ((x[i] - mean)·inv)·scale[i] + bias[i], each operation rounded
// (kernels.LayerNormApply), without the bias when len(bias) is 0.
//
// Register contract: R0 x, R1 scale, R2 bias, R3 y, R4 values left,
// V30 mean, V31 inv.
TEXT ·lnApplyNEON(SB), NOSPLIT, $0-104
	MOVD  y_base+0(FP), R3
	MOVD  y_len+8(FP), R4
	MOVD  x_base+24(FP), R0
	MOVD  scale_base+48(FP), R1
	MOVD  bias_base+72(FP), R2
	MOVD  bias_len+80(FP), R5
	FMOVS mean+96(FP), F30
	VDUP  V30.S[0], V30.S4
	FMOVS inv+100(FP), F31
	VDUP  V31.S[0], V31.S4
	CBZ   R4, applydone
	CBZ   R5, nobias

bias8:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R1), [V2.S4, V3.S4]
	VLD1.P 32(R2), [V4.S4, V5.S4]
	V_FSUB(0, 0, 30)
	V_FSUB(1, 1, 30)
	V_FMUL(0, 0, 31)
	V_FMUL(1, 1, 31)
	V_FMUL(0, 0, 2)
	V_FMUL(1, 1, 3)
	V_FADD(0, 0, 4)
	V_FADD(1, 1, 5)
	VST1.P [V0.S4, V1.S4], 32(R3)
	SUB    $8, R4
	CBNZ   R4, bias8
	RET

nobias:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R1), [V2.S4, V3.S4]
	V_FSUB(0, 0, 30)
	V_FSUB(1, 1, 30)
	V_FMUL(0, 0, 31)
	V_FMUL(1, 1, 31)
	V_FMUL(0, 0, 2)
	V_FMUL(1, 1, 3)
	VST1.P [V0.S4, V1.S4], 32(R3)
	SUB    $8, R4
	CBNZ   R4, nobias

applydone:
	RET
