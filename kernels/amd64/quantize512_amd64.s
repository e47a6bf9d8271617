//go:build gc && !purego

#include "textflag.h"

// ZQ_SETUP(top) loads the arguments of quantizeU8AVX512 and
// quantizeDivU8AVX512 (x, f, zp, u) but f, which each broadcasts to Z0
// itself: SI x, CX len(x), DI u, Z1 zp, Z2 and Z3 the clamp's bounds -zp
// and top - zp; AX the index, 0.
#define ZQ_SETUP(top) \
	MOVQ         x_base+0(FP), SI \
	MOVQ         x_len+8(FP), CX \
	MOVQ         u_base+32(FP), DI \
	MOVL         zp+28(FP), BX \
	VPBROADCASTD BX, Z1 \
	MOVL         BX, R9 \
	NEGL         R9 \
	VCVTSI2SSL   R9, X2, X2 \
	VBROADCASTSS X2, Z2 \
	MOVL         top, R9 \
	SUBL         BX, R9 \
	VCVTSI2SSL   R9, X3, X3 \
	VBROADCASTSS X3, Z3 \
	XORQ         AX, AX

// ZQ_STEP(r) finishes quantizing the 16 quotients or products in Zr (x
// times or over f, rounded once): clamped to [lo, hi] (VMAXPS then
// VMINPS, operands as the AVX2 kernels order them), rounded half to even
// (VCVTPS2DQ under the default MXCSR), + zp: in [0, top], so VPMOVDB's
// truncation to bytes is exact.
#define ZQ_STEP(r) \
	VMAXPS    Z2, r, r \
	VMINPS    Z3, r, r \
	VCVTPS2DQ r, r \
	VPADDD    Z1, r, r

// ZQ_TAILMASK sets CX to the count of the values left from AX (1..15)
// and K1 to as many lowest lanes.
#define ZQ_TAILMASK \
	SUBQ  AX, CX \
	MOVL  $1, R11 \
	SHLL  CX, R11 \
	DECL  R11 \
	KMOVW R11, K1

// func quantizeU8AVX512(x []float32, inv float32, zp int32, u []uint8)
//
// quantizeU8AVX2's steps on zmm (x·inv, then ZQ_STEP; top 127), 32 then
// 16 values at a time, the rest under a mask.
TEXT ·quantizeU8AVX512(SB), NOSPLIT, $0-56
	VBROADCASTSS inv+24(FP), Z0
	ZQ_SETUP($127)

zq32:
	LEAQ    32(AX), R10
	CMPQ    R10, CX
	JGT     zq16
	VMULPS  (SI)(AX*4), Z0, Z4 // x·inv
	VMULPS  64(SI)(AX*4), Z0, Z5
	ZQ_STEP(Z4)
	ZQ_STEP(Z5)
	VPMOVDB Z4, (DI)(AX*1)
	VPMOVDB Z5, 16(DI)(AX*1)
	MOVQ    R10, AX
	JMP     zq32

zq16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     zqtail
	VMULPS  (SI)(AX*4), Z0, Z4
	ZQ_STEP(Z4)
	VPMOVDB Z4, (DI)(AX*1)
	MOVQ    R10, AX

zqtail:
	CMPQ      AX, CX
	JEQ       zqdone
	ZQ_TAILMASK
	VMOVUPS.Z (SI)(AX*4), K1, Z4 // lanes past the end read as 0, touching nothing
	VMULPS    Z0, Z4, Z4
	ZQ_STEP(Z4)
	VPMOVDB   Z4, K1, (DI)(AX*1) // only the left lanes' bytes

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
// quantizeDivU8AVX2's steps on zmm (x/scale, then ZQ_STEP; top 255),
// as quantizeU8AVX512 runs quantizeU8AVX2's. Lanes past the end of the
// tail read as 0: 0/scale stores nothing and faults on nothing.
TEXT ·quantizeDivU8AVX512(SB), NOSPLIT, $0-56
	VBROADCASTSS scale+24(FP), Z0
	ZQ_SETUP($255)

zd32:
	LEAQ    32(AX), R10
	CMPQ    R10, CX
	JGT     zd16
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS 64(SI)(AX*4), Z5
	VDIVPS  Z0, Z4, Z4         // x/scale
	VDIVPS  Z0, Z5, Z5
	ZQ_STEP(Z4)
	ZQ_STEP(Z5)
	VPMOVDB Z4, (DI)(AX*1)
	VPMOVDB Z5, 16(DI)(AX*1)
	MOVQ    R10, AX
	JMP     zd32

zd16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     zdtail
	VMOVUPS (SI)(AX*4), Z4
	VDIVPS  Z0, Z4, Z4
	ZQ_STEP(Z4)
	VPMOVDB Z4, (DI)(AX*1)
	MOVQ    R10, AX

zdtail:
	CMPQ      AX, CX
	JEQ       zddone
	ZQ_TAILMASK
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	VDIVPS    Z0, Z4, Z4
	ZQ_STEP(Z4)
	VPMOVDB   Z4, K1, (DI)(AX*1)

zddone:
	VZEROUPPER
	RET
