//go:build gc && !purego

#include "textflag.h"

// func columnPoolSums8AVX512(dst *[8]float64, x *float32, rows, ld int)
//
// kernels.ColumnPoolSums for eight channels: Z0-Z15 hold the partial
// sums of rows 0-15 mod 16 (a row's eight channels widened to float64),
// combined as kernels.PoolSum combines its lanes, then the rows after the
// last whole sixteen added in order.
TEXT ·columnPoolSums8AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ ld+24(FP), DX
	SHLQ $2, DX
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
	MOVQ CX, BX
	SHRQ $4, BX // whole sixteens
	ANDQ $15, CX // rows after them
	TESTQ BX, BX
	JZ   combine8

sixteen8:
	VCVTPS2PD (SI), Z16
	VADDPD    Z16, Z0, Z0
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z17
	VADDPD    Z17, Z1, Z1
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z18
	VADDPD    Z18, Z2, Z2
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z19
	VADDPD    Z19, Z3, Z3
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z20
	VADDPD    Z20, Z4, Z4
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z21
	VADDPD    Z21, Z5, Z5
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z22
	VADDPD    Z22, Z6, Z6
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z23
	VADDPD    Z23, Z7, Z7
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z24
	VADDPD    Z24, Z8, Z8
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z25
	VADDPD    Z25, Z9, Z9
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z26
	VADDPD    Z26, Z10, Z10
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z27
	VADDPD    Z27, Z11, Z11
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z28
	VADDPD    Z28, Z12, Z12
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z29
	VADDPD    Z29, Z13, Z13
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z30
	VADDPD    Z30, Z14, Z14
	ADDQ      DX, SI
	VCVTPS2PD (SI), Z31
	VADDPD    Z31, Z15, Z15
	ADDQ      DX, SI
	DECQ BX
	JNZ  sixteen8

combine8:
	VADDPD Z8, Z0, Z0 // s0 + s8
	VADDPD Z9, Z1, Z1 // s1 + s9
	VADDPD Z10, Z2, Z2 // s2 + s10
	VADDPD Z11, Z3, Z3 // s3 + s11
	VADDPD Z12, Z4, Z4 // s4 + s12
	VADDPD Z13, Z5, Z5 // s5 + s13
	VADDPD Z14, Z6, Z6 // s6 + s14
	VADDPD Z15, Z7, Z7 // s7 + s15
	VADDPD Z4, Z0, Z0
	VADDPD Z5, Z1, Z1
	VADDPD Z6, Z2, Z2
	VADDPD Z7, Z3, Z3
	VADDPD Z1, Z0, Z0
	VADDPD Z3, Z2, Z2
	VADDPD Z2, Z0, Z0

tail8:
	TESTQ     CX, CX
	JZ        done8
	VCVTPS2PD (SI), Z16
	VADDPD    Z16, Z0, Z0
	ADDQ      DX, SI
	DECQ      CX
	JMP       tail8

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
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ ld+24(FP), DX
	SHLQ $2, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VMOVUPD Y0, 0(SP)
	VMOVUPD Y0, 32(SP)
	MOVQ    CX, BX
	SHRQ    $4, BX
	ANDQ    $15, CX
	TESTQ   BX, BX
	JZ      combine4

sixteen4:
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y0, Y0
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y1, Y1
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y2, Y2
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y3, Y3
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y4, Y4
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y5, Y5
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y6, Y6
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y7, Y7
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y8, Y8
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y9, Y9
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y10, Y10
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y11, Y11
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y12, Y12
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y13, Y13
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    0(SP), Y14, Y14 // s14
	VMOVUPD   Y14, 0(SP)
	ADDQ      DX, SI
	VCVTPS2PD (SI), Y14
	VADDPD    32(SP), Y14, Y14 // s15
	VMOVUPD   Y14, 32(SP)
	ADDQ      DX, SI
	DECQ BX
	JNZ  sixteen4

combine4:
	VADDPD Y8, Y0, Y0 // s0 + s8
	VADDPD Y9, Y1, Y1 // s1 + s9
	VADDPD Y10, Y2, Y2 // s2 + s10
	VADDPD Y11, Y3, Y3 // s3 + s11
	VADDPD Y12, Y4, Y4 // s4 + s12
	VADDPD Y13, Y5, Y5 // s5 + s13
	VADDPD 0(SP), Y6, Y6 // s6 + s14
	VADDPD 32(SP), Y7, Y7 // s7 + s15
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0

tail4:
	TESTQ     CX, CX
	JZ        done4
	VCVTPS2PD (SI), Y14
	VADDPD    Y14, Y0, Y0
	ADDQ      DX, SI
	DECQ      CX
	JMP       tail4

done4:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET
