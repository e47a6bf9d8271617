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
