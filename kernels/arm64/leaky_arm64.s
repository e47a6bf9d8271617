//go:build gc && !purego

#include "textflag.h"

// LeakyRelu and the bound of a Max or Min with a constant (kernels/leaky.go
// is the spec), lane by lane with the references' bits. Go's assembler
// lacks the vector float compare, FMUL, BIT, FMAX and FMIN, which go in
// as WORD.

// func leakyReluNEON(dst, src []float32, alpha float32)
//
// For every i < len(dst) (a multiple of 8), 8 at a time:
//
//	v := src[i]
//	if v < 0 { v *= alpha }   // FCMLT #0, FMUL, BIT
//	dst[i] = v
//
// The product is inserted by a compare's mask (false for NaN and -0,
// which pass through with their bits). Register contract: R0 dst, R1
// src, R3 values left, V0 alpha; V4/V5 the values, V6/V7 and V16/V17
// masks and products.
TEXT ·leakyReluNEON(SB), NOSPLIT, $0-52
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R3
	MOVD  src_base+24(FP), R1
	FMOVS alpha+48(FP), F0
	VDUP  V0.S[0], V0.S4 // alpha
	CBZ   R3, lrdone

lrloop:
	VLD1.P 32(R1), [V4.S4, V5.S4]
	WORD   $0x4ea0e886 // FCMLT V6.4S, V4.4S, #0 (v < 0)
	WORD   $0x6e20dc87 // FMUL V7.4S, V4.4S, V0.4S (v·alpha)
	WORD   $0x6ea61ce4 // BIT V4.16B, V7.16B, V6.16B (v = v·alpha where v < 0)
	WORD   $0x4ea0e8b0 // FCMLT V16.4S, V5.4S, #0
	WORD   $0x6e20dcb1 // FMUL V17.4S, V5.4S, V0.4S
	WORD   $0x6eb01e25 // BIT V5.16B, V17.16B, V16.16B
	VST1.P [V4.S4, V5.S4], 32(R0)
	SUB    $8, R3
	CBNZ   R3, lrloop

lrdone:
	RET

// func maxMinConstNEON(dst []float32, c float32, isMin bool)
//
// For every i < len(dst) (a multiple of 8), 8 at a time, with the
// instruction Go compiles max and min to on arm64 (FMAXS, FMINS), v the
// first operand:
//
//	dst[i] = max(dst[i], c)   // FMAX; FMIN when isMin
//
// Register contract: R0 dst (loads), R1 dst (stores), R3 values left, V1 c.
TEXT ·maxMinConstNEON(SB), NOSPLIT, $0-29
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R3
	FMOVS c+24(FP), F1
	VDUP  V1.S[0], V1.S4 // c
	MOVBU isMin+28(FP), R2
	MOVD  R0, R1
	CBZ   R3, mmdone
	CBNZ  R2, minloop

maxloop:
	VLD1.P 32(R0), [V4.S4, V5.S4]
	WORD   $0x4e21f484 // FMAX V4.4S, V4.4S, V1.4S
	WORD   $0x4e21f4a5 // FMAX V5.4S, V5.4S, V1.4S
	VST1.P [V4.S4, V5.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, maxloop
	RET

minloop:
	VLD1.P 32(R0), [V4.S4, V5.S4]
	WORD   $0x4ea1f484 // FMIN V4.4S, V4.4S, V1.4S
	WORD   $0x4ea1f4a5 // FMIN V5.4S, V5.4S, V1.4S
	VST1.P [V4.S4, V5.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, minloop

mmdone:
	RET

// func maxPairNEON(dst, a, b []float32)
//
// For every i < len(dst) (a multiple of 8), 8 at a time, with the
// instruction Go compiles max to on arm64 (FMAXS), a[i] the first
// operand:
//
//	dst[i] = max(a[i], b[i])   // FMAX
//
// Register contract: R0 a, R1 b, R2 dst, R3 values left.
TEXT ·maxPairNEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R2
	MOVD dst_len+8(FP), R3
	MOVD a_base+24(FP), R0
	MOVD b_base+48(FP), R1
	CBZ  R3, mpdone

mploop:
	VLD1.P 32(R0), [V4.S4, V5.S4]
	VLD1.P 32(R1), [V6.S4, V7.S4]
	WORD   $0x4e26f484 // FMAX V4.4S, V4.4S, V6.4S
	WORD   $0x4e27f4a5 // FMAX V5.4S, V5.4S, V7.4S
	VST1.P [V4.S4, V5.S4], 32(R2)
	SUB    $8, R3
	CBNZ   R3, mploop

mpdone:
	RET
