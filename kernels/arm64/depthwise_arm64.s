//go:build gc && !purego

#include "textflag.h"

// func depthwiseRowsNEON(dst, src, w []float32, offs []int, step, channels, width, pixels int)
//
// kernels.DepthwiseRows on channels [0, width) of each of the pixels
// (len(dst) = pixels·channels), with fused multiply-adds in tap order:
//
//	dst[p·ch + c] = FMA(w[t·ch + c], src[p·step + offs[t] + c], dst[p·ch + c])
//
// Pixels go four at a time (then one at a time), each block of 8 (then
// 4) channels of the four in registers while every tap is added: eight
// (four) independent accumulators. width is a positive multiple of 4, at
// most channels; len(offs) >= 1.
//
// Register contract: R0 &dst[p], R1 &src[p·step], R2 &w[0], R3 &offs[0],
// R4 &offs[len], R5 step in bytes, R6 channels in bytes (a pixel of dst,
// a tap of w), R7 pixels left, R8 the channel c in bytes, R9 width in
// bytes, R10 the tap's offs, R11 &src[p·step + c], R12 &w[t·ch + c],
// R13-R16 the four pixels' addresses, R17 scratch.
TEXT ·depthwiseRowsNEON(SB), NOSPLIT, $0-128
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD w_base+48(FP), R2
	MOVD offs_base+72(FP), R3
	MOVD offs_len+80(FP), R4
	ADD  R4<<3, R3, R4
	MOVD step+96(FP), R5
	LSL  $2, R5, R5
	MOVD channels+104(FP), R6
	LSL  $2, R6, R6
	MOVD width+112(FP), R9
	LSL  $2, R9, R9
	MOVD pixels+120(FP), R7

quad:
	CMP  $4, R7
	BLT  single
	MOVD $0, R8

quadblock:
	SUB  R8, R9, R17         // channel bytes left of width
	CMP  $32, R17
	BLT  quad4
	ADD  R8, R0, R13         // acc = dst[p..p+3][c:c+8]
	ADD  R6, R13, R14
	ADD  R6, R14, R15
	ADD  R6, R15, R16
	VLD1 (R13), [V0.S4, V1.S4]
	VLD1 (R14), [V2.S4, V3.S4]
	VLD1 (R15), [V4.S4, V5.S4]
	VLD1 (R16), [V6.S4, V7.S4]
	ADD  R8, R1, R11
	ADD  R8, R2, R12
	MOVD R3, R10

quad8tap:
	MOVD.P 8(R10), R17
	ADD    R17<<2, R11, R13  // &src[p·step + offs[t] + c]
	ADD    R5, R13, R14
	ADD    R5, R14, R15
	ADD    R5, R15, R16
	VLD1   (R12), [V16.S4, V17.S4] // w[t·ch + c : +8]
	ADD    R6, R12, R12
	VLD1   (R13), [V18.S4, V19.S4]
	VLD1   (R14), [V20.S4, V21.S4]
	VLD1   (R15), [V22.S4, V23.S4]
	VLD1   (R16), [V24.S4, V25.S4]
	VFMLA  V16.S4, V18.S4, V0.S4 // pixel p
	VFMLA  V17.S4, V19.S4, V1.S4
	VFMLA  V16.S4, V20.S4, V2.S4 // pixel p+1
	VFMLA  V17.S4, V21.S4, V3.S4
	VFMLA  V16.S4, V22.S4, V4.S4 // pixel p+2
	VFMLA  V17.S4, V23.S4, V5.S4
	VFMLA  V16.S4, V24.S4, V6.S4 // pixel p+3
	VFMLA  V17.S4, V25.S4, V7.S4
	CMP    R4, R10
	BNE    quad8tap
	ADD    R8, R0, R13
	ADD    R6, R13, R14
	ADD    R6, R14, R15
	ADD    R6, R15, R16
	VST1   [V0.S4, V1.S4], (R13)
	VST1   [V2.S4, V3.S4], (R14)
	VST1   [V4.S4, V5.S4], (R15)
	VST1   [V6.S4, V7.S4], (R16)
	ADD    $32, R8
	B      quadblock

quad4:
	CBZ  R17, quadnext
	ADD  R8, R0, R13         // acc = dst[p..p+3][c:c+4]
	ADD  R6, R13, R14
	ADD  R6, R14, R15
	ADD  R6, R15, R16
	VLD1 (R13), [V0.S4]
	VLD1 (R14), [V2.S4]
	VLD1 (R15), [V4.S4]
	VLD1 (R16), [V6.S4]
	ADD  R8, R1, R11
	ADD  R8, R2, R12
	MOVD R3, R10

quad4tap:
	MOVD.P 8(R10), R17
	ADD    R17<<2, R11, R13
	ADD    R5, R13, R14
	ADD    R5, R14, R15
	ADD    R5, R15, R16
	VLD1   (R12), [V16.S4]
	ADD    R6, R12, R12
	VLD1   (R13), [V18.S4]
	VLD1   (R14), [V20.S4]
	VLD1   (R15), [V22.S4]
	VLD1   (R16), [V24.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	VFMLA  V16.S4, V20.S4, V2.S4
	VFMLA  V16.S4, V22.S4, V4.S4
	VFMLA  V16.S4, V24.S4, V6.S4
	CMP    R4, R10
	BNE    quad4tap
	ADD    R8, R0, R13
	ADD    R6, R13, R14
	ADD    R6, R14, R15
	ADD    R6, R15, R16
	VST1   [V0.S4], (R13)
	VST1   [V2.S4], (R14)
	VST1   [V4.S4], (R15)
	VST1   [V6.S4], (R16)
	ADD    $16, R8
	B      quadblock

quadnext:
	ADD R6<<2, R0, R0        // four pixels on
	ADD R5<<2, R1, R1
	SUB $4, R7
	B   quad

single:
	CBZ  R7, done
	MOVD $0, R8

singleblock:
	ADD  R8, R0, R13         // acc = dst[p][c:c+4]
	VLD1 (R13), [V0.S4]
	ADD  R8, R1, R11
	ADD  R8, R2, R12
	MOVD R3, R10

singletap:
	MOVD.P 8(R10), R17
	ADD    R17<<2, R11, R14
	VLD1   (R12), [V16.S4]
	ADD    R6, R12, R12
	VLD1   (R14), [V18.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	CMP    R4, R10
	BNE    singletap
	VST1   [V0.S4], (R13)
	ADD    $16, R8
	CMP    R9, R8
	BLT    singleblock
	ADD    R6, R0, R0        // a pixel on
	ADD    R5, R1, R1
	SUB    $1, R7
	B      single

done:
	RET
