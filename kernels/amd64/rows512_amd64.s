//go:build gc && !purego

#include "textflag.h"

// func quantizeRowsU8AVX512(a []float32, lda, m, k int, u []uint8, ldu int, zp []int32, scale []float32) (bad int)
//
// Per row: the lane minimums, maximums and Σ x·0 (0 while every value is
// finite) in Z0-Z2 over 16 values at a time, the rest under the mask K1
// (k mod 16 lanes; a row shorter than 16 starts from x[0] in every lane),
// reduced to X0-X2; quant.RowParams on scalars, its steps in its order
// (lo = min(lo, 0), hi = max(hi, 0), span = hi - lo, the float32
// divisions, the zero point rounded half to even and clamped to
// [0, 127]); then quantizeU8AVX512's steps over the row, and zeros from k
// up to ldu.
//
// Registers: SI the row of a, R8 its stride in bytes, DI the row of u,
// R9 ldu, R10 zp, R11 scale, CX k, DX m, BX the row; Z8 zero, X9 127,
// X10 quant.MinScaleRange, X11 the largest float32; Z12 inv, Z13 zp,
// Z14 -zp and Z15 127 - zp for the row being quantized.
TEXT ·quantizeRowsU8AVX512(SB), NOSPLIT, $0-136
	MOVQ  k+40(FP), CX
	ANDQ  $15, CX
	MOVL  $1, R13
	SHLL  CX, R13
	DECL  R13
	KMOVW R13, K1
	MOVQ  a_base+0(FP), SI
	MOVQ  lda+24(FP), R8
	SHLQ  $2, R8
	MOVQ  m+32(FP), DX
	MOVQ  k+40(FP), CX
	MOVQ  u_base+48(FP), DI
	MOVQ  ldu+72(FP), R9
	MOVQ  zp_base+80(FP), R10
	MOVQ  scale_base+104(FP), R11
	VPXORD Z8, Z8, Z8
	MOVL  $0x42fe0000, R13 // 127
	VMOVD R13, X9
	MOVL  $0x03800000, R13 // 0x1p-120
	VMOVD R13, X10
	MOVL  $0x7f7fffff, R13 // math.MaxFloat32
	VMOVD R13, X11
	XORQ  BX, BX

row:
	CMPQ BX, DX
	JGE  done
	CMPQ CX, $16
	JGE  full
	VBROADCASTSS (SI), Z0 // lanes past the end hold x[0]
	VMOVUPS      (SI), K1, Z0
	JMP          start

full:
	VMOVUPS (SI), Z0

start:
	VMOVAPS Z0, Z1
	VMULPS  Z8, Z0, Z2
	MOVQ    $16, AX

mm16:
	LEAQ    16(AX), R13
	CMPQ    R13, CX
	JGT     mmtail
	VMOVUPS (SI)(AX*4), Z4
	VMINPS  Z4, Z0, Z0
	VMAXPS  Z4, Z1, Z1
	VMULPS  Z8, Z4, Z5
	VADDPS  Z5, Z2, Z2
	MOVQ    R13, AX
	JMP     mm16

mmtail:
	CMPQ      AX, CX
	JGE       reduce
	VMOVUPS.Z (SI)(AX*4), K1, Z4 // lanes past the end read as 0, touching nothing
	VMINPS    Z4, Z0, K1, Z0
	VMAXPS    Z4, Z1, K1, Z1
	VMULPS    Z8, Z4, Z5
	VADDPS    Z5, Z2, Z2

reduce:
	VEXTRACTF64X4 $1, Z0, Y4
	VMINPS        Y4, Y0, Y0
	VEXTRACTF64X4 $1, Z1, Y5
	VMAXPS        Y5, Y1, Y1
	VEXTRACTF64X4 $1, Z2, Y6
	VADDPS        Y6, Y2, Y2
	VEXTRACTF128  $1, Y0, X4
	VMINPS        X4, X0, X0
	VEXTRACTF128  $1, Y1, X5
	VMAXPS        X5, X1, X1
	VEXTRACTF128  $1, Y2, X6
	VADDPS        X6, X2, X2
	VPERMILPS     $0x4E, X0, X4
	VMINPS        X4, X0, X0
	VPERMILPS     $0x4E, X1, X5
	VMAXPS        X5, X1, X1
	VPERMILPS     $0x4E, X2, X6
	VADDPS        X6, X2, X2
	VPERMILPS     $0xB1, X0, X4
	VMINPS        X4, X0, X0
	VPERMILPS     $0xB1, X1, X5
	VMAXPS        X5, X1, X1
	VPERMILPS     $0xB1, X2, X6
	VADDPS        X6, X2, X2
	VUCOMISS      X8, X2 // Σ x·0 == 0: ZF set, PF clear
	JNE           bad
	JPS           bad

	// quant.RowParams(lo = X0, hi = X1)
	VMINSS   X8, X0, X0 // lo = min(lo, 0)
	VMAXSS   X8, X1, X1 // hi = max(hi, 0)
	VSUBSS   X0, X1, X3 // span = hi - lo
	VUCOMISS X10, X3
	JCS      zero       // span < MinScaleRange
	VUCOMISS X11, X3
	JHI      zero       // span = +Inf
	VUCOMISS X8, X0
	JNE      signed
	VDIVSS   X9, X1, X4 // scale = hi / 127
	VDIVSS   X1, X9, X5 // inv = 127 / hi
	XORL     R13, R13
	JMP      store

signed:
	VDIVSS    X9, X3, X4 // scale = span / 127
	VDIVSS    X3, X9, X5 // inv = 127 / span
	VSUBSS    X0, X8, X6 // -lo
	VMULSS    X5, X6, X6 // -lo·inv
	VCVTSS2SI X6, R13    // rounded half to even
	CMPL      R13, $0
	JGE       nonneg
	XORL      R13, R13

nonneg:
	CMPL R13, $127
	JLE  store
	MOVL $127, R13
	JMP  store

zero:
	VXORPS X4, X4, X4
	VXORPS X5, X5, X5
	XORL   R13, R13

store:
	MOVL         R13, (R10)(BX*4)
	VMOVSS       X4, (R11)(BX*4)
	VBROADCASTSS X5, Z12
	VPBROADCASTD R13, Z13
	MOVL         R13, R14
	NEGL         R14
	VCVTSI2SSL   R14, X14, X14
	VBROADCASTSS X14, Z14
	MOVL         $127, R14
	SUBL         R13, R14
	VCVTSI2SSL   R14, X15, X15
	VBROADCASTSS X15, Z15
	XORQ         AX, AX

q16:
	LEAQ      16(AX), R13
	CMPQ      R13, CX
	JGT       qtail
	VMULPS    (SI)(AX*4), Z12, Z4 // x·inv
	VMAXPS    Z14, Z4, Z4
	VMINPS    Z15, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z13, Z4, Z4
	VPMOVDB   Z4, (DI)(AX*1)
	MOVQ      R13, AX
	JMP       q16

qtail:
	CMPQ      AX, CX
	JGE       pad
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	VMULPS    Z12, Z4, Z4
	VMAXPS    Z14, Z4, Z4
	VMINPS    Z15, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z13, Z4, Z4
	VPMOVDB   Z4, K1, (DI)(AX*1) // only the row's lanes' bytes
	MOVQ      CX, AX

pad:
	CMPQ AX, R9
	JGE  next
	MOVB $0, (DI)(AX*1)
	INCQ AX
	JMP  pad

next:
	ADDQ R8, SI
	ADDQ R9, DI
	INCQ BX
	JMP  row

done:
	MOVQ $-1, bad+128(FP)
	VZEROUPPER
	RET

bad:
	MOVQ BX, bad+128(FP)
	VZEROUPPER
	RET

// func quantizeRunsU8AVX512(x []float32, bases, offs []int, w int, inv []float32, zp []int32, u []uint8, ldu int)
//
// Per row: its parameters broadcast (Z12 inv, Z13 zp, Z14 -zp, Z15
// 127 - zp), then each run quantizeU8AVX512's steps, 16 values at a time
// and the rest under K1 (w mod 16 lanes).
//
// Registers: SI x, R8 bases, R9 offs, CX w, R15 w rounded down to 16,
// R11 inv, R12 zp, DI the row of u, BX the row, R14 its first value in x,
// R10 the run, R13 the run's first value, DX its first byte, AX the value.
TEXT ·quantizeRunsU8AVX512(SB), NOSPLIT, $0-160
	MOVQ  w+72(FP), CX
	ANDQ  $15, CX
	MOVL  $1, R13
	SHLL  CX, R13
	DECL  R13
	KMOVW R13, K1
	MOVQ  x_base+0(FP), SI
	MOVQ  bases_base+24(FP), R8
	MOVQ  offs_base+48(FP), R9
	MOVQ  w+72(FP), CX
	MOVQ  CX, R15
	ANDQ  $-16, R15
	MOVQ  inv_base+80(FP), R11
	MOVQ  zp_base+104(FP), R12
	MOVQ  u_base+128(FP), DI
	XORQ  BX, BX

runsrow:
	CMPQ         BX, bases_len+32(FP)
	JGE          runsdone
	VBROADCASTSS (R11)(BX*4), Z12
	MOVL         (R12)(BX*4), R13
	VPBROADCASTD R13, Z13
	MOVL         R13, R14
	NEGL         R14
	VCVTSI2SSL   R14, X14, X14
	VBROADCASTSS X14, Z14
	MOVL         $127, R14
	SUBL         R13, R14
	VCVTSI2SSL   R14, X15, X15
	VBROADCASTSS X15, Z15
	MOVQ         (R8)(BX*8), R14
	LEAQ         (SI)(R14*4), R14
	MOVQ         DI, DX
	XORQ         R10, R10

run:
	MOVQ (R9)(R10*8), R13
	LEAQ (R14)(R13*4), R13
	XORQ AX, AX

run16:
	CMPQ      AX, R15
	JGE       runtail
	VMULPS    (R13)(AX*4), Z12, Z4 // x·inv
	VMAXPS    Z14, Z4, Z4
	VMINPS    Z15, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z13, Z4, Z4
	VPMOVDB   Z4, (DX)(AX*1)
	ADDQ      $16, AX
	JMP       run16

runtail:
	CMPQ      AX, CX
	JGE       runend
	VMOVUPS.Z (R13)(AX*4), K1, Z4 // lanes past the run read as 0, touching nothing
	VMULPS    Z12, Z4, Z4
	VMAXPS    Z14, Z4, Z4
	VMINPS    Z15, Z4, Z4
	VCVTPS2DQ Z4, Z4
	VPADDD    Z13, Z4, Z4
	VPMOVDB   Z4, K1, (DX)(AX*1)

runend:
	ADDQ CX, DX
	INCQ R10
	CMPQ R10, offs_len+56(FP)
	JLT  run
	ADDQ ldu+152(FP), DI
	INCQ BX
	JMP  runsrow

runsdone:
	VZEROUPPER
	RET
