//go:build gc && !purego

#include "textflag.h"

// func quantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8)
//
// quantizeU8AVX2's steps on zmm, 32 then 16 values at a time, the rest
// under a mask: q = x·inv clamped to [-zp, 127-zp] (VMAXPS then VMINPS,
// operands as the AVX2 kernel orders them), rounded half to even
// (VCVTPS2DQ under the default MXCSR), + zp, now in [0, 127], so VPMOVDB's
// truncation to bytes is exact.
//
// Register contract: SI x, DI u, CX len(x), AX the index, Z0 inv, Z1 zp,
// Z2 lo, Z3 hi.
TEXT ·quantizeU8AVX512(SB), NOSPLIT, $0-56
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS inv+24(FP), Z0
	MOVQ         u_base+32(FP), DI
	MOVL         zp+28(FP), BX
	VPBROADCASTD BX, Z1
	MOVL         BX, R9
	NEGL         R9
	VCVTSI2SSL   R9, X2, X2
	VBROADCASTSS X2, Z2 // lo
	MOVL         $127, R9
	SUBL         BX, R9
	VCVTSI2SSL   R9, X3, X3
	VBROADCASTSS X3, Z3 // hi
	XORQ         AX, AX

zq32:
	LEAQ      32(AX), R10
	CMPQ      R10, CX
	JGT       zq16
	VMULPS    (SI)(AX*4), Z0, Z4   // x·inv
	VMULPS    64(SI)(AX*4), Z0, Z5
	VMAXPS    Z2, Z4, Z4
	VMAXPS    Z2, Z5, Z5
	VMINPS    Z3, Z4, Z4           // clamp to [lo, hi]
	VMINPS    Z3, Z5, Z5
	VCVTPS2DQ Z4, Z4               // round half to even
	VCVTPS2DQ Z5, Z5
	VPADDD    Z1, Z4, Z4           // + zp, now in [0, 127]
	VPADDD    Z1, Z5, Z5
	VPMOVDB   Z4, (DI)(AX*1)
	VPMOVDB   Z5, 16(DI)(AX*1)
	MOVQ      R10, AX
	JMP       zq32

zq16:
	LEAQ      16(AX), R10
	CMPQ      R10, CX
	JGT       zqtail
	VMULPS    (SI)(AX*4), Z0, Z4
	VMAXPS    Z2, Z4, Z4
	VMINPS    Z3, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z1, Z4, Z4
	VPMOVDB   Z4, (DI)(AX*1)
	MOVQ      R10, AX

zqtail:
	SUBQ      AX, CX               // values left, 0..15
	JZ        zqdone
	MOVL      $1, R11
	SHLL      CX, R11
	DECL      R11
	KMOVW     R11, K1              // the left lowest lanes
	VMOVUPS.Z (SI)(AX*4), K1, Z4   // lanes past the end read as 0, touching nothing
	VMULPS    Z0, Z4, Z4
	VMAXPS    Z2, Z4, Z4
	VMINPS    Z3, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z1, Z4, Z4
	VPMOVDB   Z4, K1, (DI)(AX*1)   // only the left lanes' bytes

zqdone:
	VZEROUPPER
	RET

// func minMaxAVX512(x []float32) (lo, hi float32, finite bool)
//
// Lane minimums in Z0, Z6, Z8, Z10 and maximums in Z1, Z7, Z9, Z11 (each
// chain starts from x's first 16 values, or its first under the mask),
// Σ x·0 in Z2, Z12, Z13, Z14: 0 while every value is finite, NaN after
// any NaN or ±Inf. The tail's lanes past the end leave the chains as
// they are (merge masking).
//
// Register contract: SI x, CX len(x) >= 1, Z3 zero.
TEXT ·minMaxAVX512(SB), NOSPLIT, $0-33
	MOVQ    x_base+0(FP), SI
	MOVQ    x_len+8(FP), CX
	VPXORD  Z3, Z3, Z3
	VPXORD  Z2, Z2, Z2
	VPXORD  Z12, Z12, Z12
	VPXORD  Z13, Z13, Z13
	VPXORD  Z14, Z14, Z14
	CMPQ    CX, $16
	JGE     zmfull
	MOVL    $1, R11
	SHLL    CX, R11
	DECL    R11
	KMOVW   R11, K1
	VBROADCASTSS (SI), Z0        // lanes past the end hold x[0]
	VMOVUPS (SI), K1, Z0
	JMP     zmstart

zmfull:
	VMOVUPS (SI), Z0

zmstart:
	VMOVAPS Z0, Z1
	VMOVAPS Z0, Z6
	VMOVAPS Z0, Z7
	VMOVAPS Z0, Z8
	VMOVAPS Z0, Z9
	VMOVAPS Z0, Z10
	VMOVAPS Z0, Z11

zm64:
	CMPQ    CX, $64
	JLT     zm16
	VMOVUPS (SI), Z4
	VMINPS  Z4, Z0, Z0
	VMAXPS  Z4, Z1, Z1
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z2, Z2
	VMOVUPS 64(SI), Z4
	VMINPS  Z4, Z6, Z6
	VMAXPS  Z4, Z7, Z7
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z12, Z12
	VMOVUPS 128(SI), Z4
	VMINPS  Z4, Z8, Z8
	VMAXPS  Z4, Z9, Z9
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z13, Z13
	VMOVUPS 192(SI), Z4
	VMINPS  Z4, Z10, Z10
	VMAXPS  Z4, Z11, Z11
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z14, Z14
	ADDQ    $256, SI
	SUBQ    $64, CX
	JMP     zm64

zm16:
	CMPQ    CX, $16
	JLT     zmtail
	VMOVUPS (SI), Z4
	VMINPS  Z4, Z0, Z0
	VMAXPS  Z4, Z1, Z1
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z2, Z2
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     zm16

zmtail:
	TESTQ   CX, CX
	JZ      zmreduce
	MOVL    $1, R11
	SHLL    CX, R11
	DECL    R11
	KMOVW   R11, K1
	VMOVUPS.Z (SI), K1, Z4       // lanes past the end read as 0, touching nothing
	VMINPS  Z4, Z0, K1, Z0
	VMAXPS  Z4, Z1, K1, Z1
	VMULPS  Z3, Z4, Z5
	VADDPS  Z5, Z2, Z2

zmreduce:
	VMINPS  Z6, Z0, Z0
	VMINPS  Z10, Z8, Z8
	VMINPS  Z8, Z0, Z0
	VMAXPS  Z7, Z1, Z1
	VMAXPS  Z11, Z9, Z9
	VMAXPS  Z9, Z1, Z1
	VADDPS  Z12, Z2, Z2
	VADDPS  Z14, Z13, Z13
	VADDPS  Z13, Z2, Z2
	// 16 lanes to 1: halves, quarters, then within 128 bits
	VEXTRACTF32X8 $1, Z0, Y4
	VMINPS  Y4, Y0, Y0
	VEXTRACTF32X8 $1, Z1, Y5
	VMAXPS  Y5, Y1, Y1
	VEXTRACTF32X8 $1, Z2, Y6
	VADDPS  Y6, Y2, Y2
	VEXTRACTF128 $1, Y0, X4
	VMINPS  X4, X0, X0
	VEXTRACTF128 $1, Y1, X5
	VMAXPS  X5, X1, X1
	VEXTRACTF128 $1, Y2, X6
	VADDPS  X6, X2, X2
	VPERMILPS $0x4E, X0, X4
	VMINPS  X4, X0, X0
	VPERMILPS $0x4E, X1, X5
	VMAXPS  X5, X1, X1
	VPERMILPS $0x4E, X2, X6
	VADDPS  X6, X2, X2
	VPERMILPS $0xB1, X0, X4
	VMINPS  X4, X0, X0
	VPERMILPS $0xB1, X1, X5
	VMAXPS  X5, X1, X1
	VPERMILPS $0xB1, X2, X6
	VADDPS  X6, X2, X2
	VMOVSS  X0, lo+24(FP)
	VMOVSS  X1, hi+28(FP)
	VUCOMISS X3, X2              // Σ x·0 == 0: ZF set, PF clear
	SETEQ   AL
	SETPC   BL
	ANDB    BL, AL
	MOVB    AL, finite+32(FP)
	VZEROUPPER
	RET

// func quantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8)
//
// quantizeDivU8AVX2's steps on zmm, as quantizeU8AVX512 runs
// quantizeU8AVX2's: q = x/scale (VDIVPS) clamped to [-zp, 255-zp],
// rounded half to even, + zp, now in [0, 255], which VPMOVDB's
// truncation keeps; 32 then 16 values at a time, the rest under a mask.
//
// Register contract: SI x, DI u, CX len(x), AX the index, Z0 scale, Z1
// zp, Z2 lo, Z3 hi.
TEXT ·quantizeDivU8AVX512(SB), NOSPLIT, $0-56
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Z0
	MOVQ         u_base+32(FP), DI
	MOVL         zp+28(FP), BX
	VPBROADCASTD BX, Z1
	MOVL         BX, R9
	NEGL         R9
	VCVTSI2SSL   R9, X2, X2
	VBROADCASTSS X2, Z2 // lo
	MOVL         $255, R9
	SUBL         BX, R9
	VCVTSI2SSL   R9, X3, X3
	VBROADCASTSS X3, Z3 // hi
	XORQ         AX, AX

zd32:
	LEAQ      32(AX), R10
	CMPQ      R10, CX
	JGT       zd16
	VMOVUPS   (SI)(AX*4), Z4
	VMOVUPS   64(SI)(AX*4), Z5
	VDIVPS    Z0, Z4, Z4           // x/scale
	VDIVPS    Z0, Z5, Z5
	VMAXPS    Z2, Z4, Z4
	VMAXPS    Z2, Z5, Z5
	VMINPS    Z3, Z4, Z4           // clamp to [lo, hi]
	VMINPS    Z3, Z5, Z5
	VCVTPS2DQ Z4, Z4               // round half to even
	VCVTPS2DQ Z5, Z5
	VPADDD    Z1, Z4, Z4           // + zp, now in [0, 255]
	VPADDD    Z1, Z5, Z5
	VPMOVDB   Z4, (DI)(AX*1)
	VPMOVDB   Z5, 16(DI)(AX*1)
	MOVQ      R10, AX
	JMP       zd32

zd16:
	LEAQ      16(AX), R10
	CMPQ      R10, CX
	JGT       zdtail
	VMOVUPS   (SI)(AX*4), Z4
	VDIVPS    Z0, Z4, Z4
	VMAXPS    Z2, Z4, Z4
	VMINPS    Z3, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z1, Z4, Z4
	VPMOVDB   Z4, (DI)(AX*1)
	MOVQ      R10, AX

zdtail:
	SUBQ      AX, CX               // values left, 0..15
	JZ        zddone
	MOVL      $1, R11
	SHLL      CX, R11
	DECL      R11
	KMOVW     R11, K1              // the left lowest lanes
	VMOVUPS.Z (SI)(AX*4), K1, Z4   // lanes past the end read as 0 (0/scale: no fault, no NaN stored)
	VDIVPS    Z0, Z4, Z4
	VMAXPS    Z2, Z4, Z4
	VMINPS    Z3, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z1, Z4, Z4
	VPMOVDB   Z4, K1, (DI)(AX*1)   // only the left lanes' bytes

zddone:
	VZEROUPPER
	RET
