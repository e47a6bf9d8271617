//go:build gc && !purego

#include "textflag.h"

// ROW adds the row at SI, widened to float64 through t, to the partial
// sum acc, and moves SI to the next row (DX bytes on).
#define ROW(acc, t) \
	VCVTPS2PD (SI), t \
	VADDPD    t, acc, acc \
	ADDQ      DX, SI

// ROW14 is ROW for a partial sum kept in the frame at off(SP), through t.
#define ROW14(off, t) \
	VCVTPS2PD (SI), t \
	VADDPD    off(SP), t, t \
	VMOVUPD   t, off(SP) \
	ADDQ      DX, SI

// COMBINE folds the partial sums s0..s15 (s8..s15 already added to
// s0..s7) as kernels.PoolSum folds its lanes: a_j = b_j + b_j+4, then
// (a0 + a1) + (a2 + a3) in s0.
#define COMBINE(s0, s1, s2, s3, s4, s5, s6, s7) \
	VADDPD s4, s0, s0 \
	VADDPD s5, s1, s1 \
	VADDPD s6, s2, s2 \
	VADDPD s7, s3, s3 \
	VADDPD s1, s0, s0 \
	VADDPD s3, s2, s2 \
	VADDPD s2, s0, s0

// func columnPoolSums8AVX512(dst *[8]float64, x *float32, rows, ld int)
//
// kernels.ColumnPoolSums for eight channels: Z0-Z15 hold the partial
// sums of rows 0-15 mod 16 (a row's eight channels widened to float64),
// combined as kernels.PoolSum combines its lanes, then the rows after the
// last whole sixteen added in order.
TEXT ·columnPoolSums8AVX512(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   rows+16(FP), CX
	MOVQ   ld+24(FP), DX
	SHLQ   $2, DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ   CX, BX
	SHRQ   $4, BX               // whole sixteens
	ANDQ   $15, CX              // rows after them
	TESTQ  BX, BX
	JZ     combine8

sixteen8:
	ROW(Z0, Z16)
	ROW(Z1, Z17)
	ROW(Z2, Z18)
	ROW(Z3, Z19)
	ROW(Z4, Z20)
	ROW(Z5, Z21)
	ROW(Z6, Z22)
	ROW(Z7, Z23)
	ROW(Z8, Z24)
	ROW(Z9, Z25)
	ROW(Z10, Z26)
	ROW(Z11, Z27)
	ROW(Z12, Z28)
	ROW(Z13, Z29)
	ROW(Z14, Z30)
	ROW(Z15, Z31)
	DECQ BX
	JNZ  sixteen8

combine8:
	VADDPD Z8, Z0, Z0  // b_j = s_j + s_j+8
	VADDPD Z9, Z1, Z1
	VADDPD Z10, Z2, Z2
	VADDPD Z11, Z3, Z3
	VADDPD Z12, Z4, Z4
	VADDPD Z13, Z5, Z5
	VADDPD Z14, Z6, Z6
	VADDPD Z15, Z7, Z7
	COMBINE(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

tail8:
	TESTQ CX, CX
	JZ    done8
	ROW(Z0, Z16)
	DECQ  CX
	JMP   tail8

done8:
	VMOVUPD Z0, (DI)
	VZEROUPPER
	RET

// func columnPoolSums4AVX2(dst *[4]float64, x *float32, rows, ld int)
//
// columnPoolSums8AVX512 for four channels: the partial sums of rows 0-13
// mod 16 in Y0-Y13, of rows 14 and 15 in the frame (0 and 32), Y14 and
// Y15 scratch.
TEXT ·columnPoolSums4AVX2(SB), NOSPLIT, $64-32
	MOVQ    dst+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    rows+16(FP), CX
	MOVQ    ld+24(FP), DX
	SHLQ    $2, DX
	VXORPD  Y0, Y0, Y0
	VXORPD  Y1, Y1, Y1
	VXORPD  Y2, Y2, Y2
	VXORPD  Y3, Y3, Y3
	VXORPD  Y4, Y4, Y4
	VXORPD  Y5, Y5, Y5
	VXORPD  Y6, Y6, Y6
	VXORPD  Y7, Y7, Y7
	VXORPD  Y8, Y8, Y8
	VXORPD  Y9, Y9, Y9
	VXORPD  Y10, Y10, Y10
	VXORPD  Y11, Y11, Y11
	VXORPD  Y12, Y12, Y12
	VXORPD  Y13, Y13, Y13
	VMOVUPD Y0, 0(SP)
	VMOVUPD Y0, 32(SP)
	MOVQ    CX, BX
	SHRQ    $4, BX
	ANDQ    $15, CX
	TESTQ   BX, BX
	JZ      combine4

sixteen4:
	ROW(Y0, Y14)
	ROW(Y1, Y15)
	ROW(Y2, Y14)
	ROW(Y3, Y15)
	ROW(Y4, Y14)
	ROW(Y5, Y15)
	ROW(Y6, Y14)
	ROW(Y7, Y15)
	ROW(Y8, Y14)
	ROW(Y9, Y15)
	ROW(Y10, Y14)
	ROW(Y11, Y15)
	ROW(Y12, Y14)
	ROW(Y13, Y15)
	ROW14(0, Y14)
	ROW14(32, Y15)
	DECQ BX
	JNZ  sixteen4

combine4:
	VADDPD Y8, Y0, Y0      // b_j = s_j + s_j+8
	VADDPD Y9, Y1, Y1
	VADDPD Y10, Y2, Y2
	VADDPD Y11, Y3, Y3
	VADDPD Y12, Y4, Y4
	VADDPD Y13, Y5, Y5
	VADDPD 0(SP), Y6, Y6   // s14
	VADDPD 32(SP), Y7, Y7  // s15
	COMBINE(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)

tail4:
	TESTQ CX, CX
	JZ    done4
	ROW(Y0, Y14)
	DECQ  CX
	JMP   tail4

done4:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET
