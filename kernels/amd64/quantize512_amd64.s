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

// ZQ_MASK16(n) sets K1 to as many lowest lanes as n (an argument) has
// values past its last whole 16. It uses CX and R13.
#define ZQ_MASK16(n) \
	MOVQ  n, CX \
	ANDQ  $15, CX \
	MOVL  $1, R13 \
	SHLL  CX, R13 \
	DECL  R13 \
	KMOVW R13, K1

// ZM_LANES reduces the lanes of Z0 (minimums), Z1 (maximums) and Z2
// (sums) to X0, X1 and X2's lowest: halves, quarters, then within 128
// bits. It uses Y4-Y6.
#define ZM_LANES \
	VEXTRACTF64X4 $1, Z0, Y4 \
	VMINPS        Y4, Y0, Y0 \
	VEXTRACTF64X4 $1, Z1, Y5 \
	VMAXPS        Y5, Y1, Y1 \
	VEXTRACTF64X4 $1, Z2, Y6 \
	VADDPS        Y6, Y2, Y2 \
	VEXTRACTF128  $1, Y0, X4 \
	VMINPS        X4, X0, X0 \
	VEXTRACTF128  $1, Y1, X5 \
	VMAXPS        X5, X1, X1 \
	VEXTRACTF128  $1, Y2, X6 \
	VADDPS        X6, X2, X2 \
	VPERMILPS     $0x4E, X0, X4 \
	VMINPS        X4, X0, X0 \
	VPERMILPS     $0x4E, X1, X5 \
	VMAXPS        X5, X1, X1 \
	VPERMILPS     $0x4E, X2, X6 \
	VADDPS        X6, X2, X2 \
	VPERMILPS     $0xB1, X0, X4 \
	VMINPS        X4, X0, X0 \
	VPERMILPS     $0xB1, X1, X5 \
	VMAXPS        X5, X1, X1 \
	VPERMILPS     $0xB1, X2, X6 \
	VADDPS        X6, X2, X2

// ZQ_ROW(zp) sets the clamp of a row quantized with zero point zp (a
// 32-bit register): Z13 zp, Z14 -zp and Z15 127 - zp. It uses R14.
#define ZQ_ROW(zp) \
	VPBROADCASTD zp, Z13 \
	MOVL         zp, R14 \
	NEGL         R14 \
	VCVTSI2SSL   R14, X14, X14 \
	VBROADCASTSS X14, Z14 \
	MOVL         $127, R14 \
	SUBL         zp, R14 \
	VCVTSI2SSL   R14, X15, X15 \
	VBROADCASTSS X15, Z15

// ZQ_ROWSTEP(r) is ZQ_STEP on ZQ_ROW's registers.
#define ZQ_ROWSTEP(r) \
	VMAXPS    Z14, r, r \
	VMINPS    Z15, r, r \
	VCVTPS2DQ r, r \
	VPADDD    Z13, r, r

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
	ZM_LANES
	VMOVSS  X0, lo+24(FP)
	VMOVSS  X1, hi+28(FP)
	VUCOMISS X3, X2              // Σ x·0 == 0: ZF set, PF clear
	SETEQ   AL
	SETPC   BL
	ANDB    BL, AL
	MOVB    AL, finite+32(FP)
	VZEROUPPER
	RET

// ZQ_NEAR(r, t, d, k) sets Zt = Zr·(1/scale) (Z16) and Kk to the lanes
// whose Zt lies within 2^-11 of a midpoint between integers, or is not
// finite: |Zt − roundEven(Zt)| not below 0.5 − 2^-11 (Z19), or unordered
// (Z18 the sign bit's complement, Zd scratch).
#define ZQ_NEAR(r, t, d, k) \
	VMULPS      Z16, r, t; \
	VRNDSCALEPS $8, t, d; \
	VSUBPS      d, t, d; \
	VANDPS      Z18, d, d; \
	VCMPPS      $5, Z19, d, k

// func quantizeDivU8AVX512(x []float32, scale float32, zp int32, u []uint8)
//
// quantizeDivU8AVX2's steps on zmm (x/scale, then ZQ_STEP; top 255),
// as quantizeU8AVX512 runs quantizeU8AVX2's. Lanes past the end of the
// tail read as 0: 0/scale stores nothing and faults on nothing.
//
// A block first multiplies by 1/scale, as fakeQuantAVX512 does: for
// |x/scale| up to 512 the product is within 2^-13 of the quotient, so
// where it lies further than 2^-11 from a midpoint the two round to the
// same integer; larger ones clamp alike (the bounds are within 255 of
// 0). A block with a lane near a midpoint (about one value in a thousand
// of random ones; none of a pair's outputs, which lie on integers), or
// whose product is not finite (1/scale infinite among them), divides
// instead: the same bytes either way. A Zen 4 divides a zmm about as
// fast as it runs the check (BenchmarkQuantizeDivU8: 440-455 ns against
// 446-460 for 4,096 values); a Xeon's zmm division takes about as long
// as ten multiplications.
TEXT ·quantizeDivU8AVX512(SB), NOSPLIT, $0-56
	VBROADCASTSS scale+24(FP), Z0
	ZQ_SETUP($255)
	MOVL         $0x3f800000, R8 // 1
	VPBROADCASTD R8, Z16
	VDIVPS       Z0, Z16, Z16    // 1/scale
	MOVL         $0x7fffffff, R8
	VPBROADCASTD R8, Z18
	MOVL         $0x3effc000, R8 // 0.5 − 2^-11
	VPBROADCASTD R8, Z19

zd32:
	LEAQ     32(AX), R10
	CMPQ     R10, CX
	JGT      zd16
	VMOVUPS  (SI)(AX*4), Z4
	VMOVUPS  64(SI)(AX*4), Z5
	ZQ_NEAR(Z4, Z20, Z22, K2)
	ZQ_NEAR(Z5, Z21, Z23, K3)
	KORTESTW K2, K3
	JNZ      zd32div          // a lane near a midpoint, or not finite
	ZQ_STEP(Z20)
	ZQ_STEP(Z21)
	VPMOVDB  Z20, (DI)(AX*1)
	VPMOVDB  Z21, 16(DI)(AX*1)
	MOVQ     R10, AX
	JMP      zd32

zd32div:
	VDIVPS  Z0, Z4, Z4         // x/scale
	VDIVPS  Z0, Z5, Z5
	ZQ_STEP(Z4)
	ZQ_STEP(Z5)
	VPMOVDB Z4, (DI)(AX*1)
	VPMOVDB Z5, 16(DI)(AX*1)
	MOVQ    R10, AX
	JMP     zd32

zd16:
	LEAQ     16(AX), R10
	CMPQ     R10, CX
	JGT      zdtail
	VMOVUPS  (SI)(AX*4), Z4
	ZQ_NEAR(Z4, Z20, Z22, K2)
	KORTESTW K2, K2
	JZ       zd16mul
	VDIVPS   Z0, Z4, Z20
zd16mul:
	ZQ_STEP(Z20)
	VPMOVDB  Z20, (DI)(AX*1)
	MOVQ     R10, AX

zdtail:
	CMPQ      AX, CX
	JEQ       zddone
	ZQ_TAILMASK
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	ZQ_NEAR(Z4, Z20, Z22, K2)
	KORTESTW  K2, K2
	JZ        zdtailmul
	VDIVPS    Z0, Z4, Z20
zdtailmul:
	ZQ_STEP(Z20)
	VPMOVDB   Z20, K1, (DI)(AX*1)

zddone:
	VZEROUPPER
	RET

// func minMaxRowsAVX512(a []float32, lda, m, k int, lo, hi []float32) (bad int)
//
// Per row: the lane minimums, maximums and Σ x·0 (0 while every value is
// finite) in Z0-Z2 over 16 values at a time, the rest under the mask K1
// (k mod 16 lanes; a row shorter than 16 starts from x[0] in every lane),
// reduced to X0-X2 and stored to lo and hi. A row of 128 values or more
// runs two chains, 32 values a step, the second in Z16-Z18, merged
// before the reduction: one chain waited on its own minimum, maximum and
// sum each step (a row of 2,048 took 15-35% longer, of 256 6-10%; 64
// gain nothing). The minimum and maximum are exact in any order but for
// a zero's sign, and Σ x·0 is only compared with zero. No row waits on
// another: where a row's range, parameters and bytes were taken in one
// pass, a row of 64 values waited some 60 cycles on its reduction and
// divisions before the next could start.
//
// Registers: SI the row of a, R8 its stride in bytes, R10 lo, R11 hi,
// CX k, DX m, BX the row; Z8 zero; Z16-Z18 the second chain, Z19-Z20 its
// operands.
TEXT ·minMaxRowsAVX512(SB), NOSPLIT, $0-104
	ZQ_MASK16(k+40(FP))
	MOVQ   a_base+0(FP), SI
	MOVQ   lda+24(FP), R8
	SHLQ   $2, R8
	MOVQ   m+32(FP), DX
	MOVQ   k+40(FP), CX
	MOVQ   lo_base+48(FP), R10
	MOVQ   hi_base+72(FP), R11
	VPXORD Z8, Z8, Z8
	XORQ   BX, BX

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
	CMPQ    CX, $128
	JLT     mm16        // a short row: one chain
	VMOVAPS Z0, Z16
	VMOVAPS Z0, Z17
	VMOVAPS Z8, Z18

mm32:
	LEAQ    32(AX), R13
	CMPQ    R13, CX
	JGT     mm16
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS 64(SI)(AX*4), Z19
	VMINPS  Z4, Z0, Z0
	VMAXPS  Z4, Z1, Z1
	VMULPS  Z8, Z4, Z5
	VADDPS  Z5, Z2, Z2
	VMINPS  Z19, Z16, Z16
	VMAXPS  Z19, Z17, Z17
	VMULPS  Z8, Z19, Z20
	VADDPS  Z20, Z18, Z18
	MOVQ    R13, AX
	JMP     mm32

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
	CMPQ   CX, $128
	JLT    lanes
	VMINPS Z16, Z0, Z0
	VMAXPS Z17, Z1, Z1
	VADDPS Z18, Z2, Z2

lanes:
	ZM_LANES
	VUCOMISS X8, X2 // Σ x·0 == 0: ZF set, PF clear
	JNE      bad
	JPS      bad
	VMOVSS   X0, (R10)(BX*4)
	VMOVSS   X1, (R11)(BX*4)
	ADDQ     R8, SI
	INCQ     BX
	JMP      row

done:
	MOVQ $-1, bad+96(FP)
	VZEROUPPER
	RET

bad:
	MOVQ BX, bad+96(FP)
	VZEROUPPER
	RET

// func quantizeRangedRowsAVX512(a []float32, lda, m, k int, lo, hi []float32, u []uint8, ldu int, zp []int32, scale []float32)
//
// At most 16 rows whose ranges minMaxRowsAVX512 took: their parameters in
// one vector pass, quant.RowParams lane by lane (lo = min(lo, 0), hi =
// max(hi, 0), span = hi - lo; where span is at least
// quant.MinScaleRange and finite, scale = span / 127, inv = 127 / span
// and the zero point -lo·inv rounded half to even, clamped to [0, 127]
// as RowParams clamps, and 0, 0, 0 elsewhere; where lo = 0, the Go
// code's other branch, span is hi and -lo·inv rounds to 0: the same
// bits), zero points and scales stored under K2 (the rows), inv to the
// frame; then each row's bytes, quantizeU8AVX512's steps with its inv
// and zero point, and zeros from k up to ldu.
//
// Registers: SI the row of a, R8 its stride in bytes, DI the row of u,
// R9 ldu, R10 zp, R11 scale, CX k, DX m, BX the row; Z8 zero, Z9 127.0,
// Z10 quant.MinScaleRange, Z11 the largest float32, Z7 127 as int32; Z12
// inv, Z13 zp, Z14 -zp and Z15 127 - zp for the row being quantized.
TEXT ·quantizeRangedRowsAVX512(SB), NOSPLIT, $64-176
	MOVQ         m+32(FP), CX // K2: the m rows
	MOVL         $1, R13
	SHLL         CX, R13
	DECL         R13
	KMOVW        R13, K2
	ZQ_MASK16(k+40(FP))
	MOVQ         a_base+0(FP), SI
	MOVQ         lda+24(FP), R8
	SHLQ         $2, R8
	MOVQ         m+32(FP), DX
	MOVQ         k+40(FP), CX
	MOVQ         u_base+96(FP), DI
	MOVQ         ldu+120(FP), R9
	MOVQ         zp_base+128(FP), R10
	MOVQ         scale_base+152(FP), R11
	VPXORD       Z8, Z8, Z8
	MOVL         $0x42fe0000, R13 // 127
	VPBROADCASTD R13, Z9
	MOVL         $0x03800000, R13 // 0x1p-120
	VPBROADCASTD R13, Z10
	MOVL         $0x7f7fffff, R13 // math.MaxFloat32
	VPBROADCASTD R13, Z11
	MOVL         $127, R13
	VPBROADCASTD R13, Z7
	MOVQ         lo_base+48(FP), R13
	VMOVUPS.Z    (R13), K2, Z0
	MOVQ         hi_base+72(FP), R13
	VMOVUPS.Z    (R13), K2, Z1
	VMINPS       Z8, Z0, Z0             // lo = min(lo, 0)
	VMAXPS       Z8, Z1, Z1             // hi = max(hi, 0)
	VSUBPS       Z0, Z1, Z3             // span = hi - lo
	VCMPPS       $0x0d, Z10, Z3, K3     // span >= MinScaleRange
	VCMPPS       $0x02, Z11, Z3, K3, K3 // and finite
	VDIVPS.Z     Z9, Z3, K3, Z4         // scale = span / 127
	VDIVPS.Z     Z3, Z9, K3, Z5         // inv = 127 / span
	VSUBPS       Z0, Z8, Z6             // -lo
	VMULPS       Z5, Z6, Z6             // -lo·inv
	VCVTPS2DQ    Z6, Z6                 // rounded half to even
	VPMAXSD      Z8, Z6, Z6             // clamped as RowParams clamps (0 <= -lo <= span: never binds)
	VPMINSD      Z7, Z6, Z6
	VMOVUPS      Z5, (SP)
	VMOVDQU32    Z6, K2, (R10)
	VMOVUPS      Z4, K2, (R11)
	XORQ         BX, BX

quantize:
	CMPQ         BX, DX
	JGE          finished
	VBROADCASTSS (SP)(BX*4), Z12
	MOVL         (R10)(BX*4), R13
	ZQ_ROW(R13)
	XORQ         AX, AX

q16:
	LEAQ      16(AX), R13
	CMPQ      R13, CX
	JGT       qtail
	VMULPS    (SI)(AX*4), Z12, Z4 // x·inv
	ZQ_ROWSTEP(Z4)
	VPMOVDB   Z4, (DI)(AX*1)
	MOVQ      R13, AX
	JMP       q16

qtail:
	CMPQ      AX, CX
	JGE       pad
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	VMULPS    Z12, Z4, Z4
	ZQ_ROWSTEP(Z4)
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
	JMP  quantize

finished:
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
	ZQ_MASK16(w+72(FP))
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
	ZQ_ROW(R13)
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
	ZQ_ROWSTEP(Z4)
	VPMOVDB   Z4, (DX)(AX*1)
	ADDQ      $16, AX
	JMP       run16

runtail:
	CMPQ      AX, CX
	JGE       runend
	VMOVUPS.Z (R13)(AX*4), K1, Z4 // lanes past the run read as 0, touching nothing
	VMULPS    Z12, Z4, Z4
	ZQ_ROWSTEP(Z4)
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

// func gatherRunsU8AVX512(x []uint8, bases, offs []int, w int, u []uint8, ldu int)
//
// Per row, each run copied 64 bytes at a time and the rest under K2
// (w mod 64 lanes; masked loads touch nothing past the run).
//
// Registers: SI x, R8 bases, R9 offs, CX w, R15 w rounded down to 64,
// DI the row of u, BX the row, R14 its first byte in x, R10 the run, R13
// the run's first byte, DX its first byte in u, AX the byte.
TEXT ·gatherRunsU8AVX512(SB), NOSPLIT, $0-112
	MOVQ  w+72(FP), CX
	MOVQ  CX, R15
	ANDQ  $-64, R15
	ANDQ  $63, CX
	MOVQ  $-1, R13
	SHLQ  CX, R13
	NOTQ  R13      // the low w mod 64 bits
	KMOVQ R13, K2
	MOVQ  w+72(FP), CX
	MOVQ  x_base+0(FP), SI
	MOVQ  bases_base+24(FP), R8
	MOVQ  offs_base+48(FP), R9
	MOVQ  u_base+80(FP), DI
	XORQ  BX, BX

gatherrow:
	CMPQ BX, bases_len+32(FP)
	JGE  gatherdone
	MOVQ (R8)(BX*8), R14
	ADDQ SI, R14
	MOVQ DI, DX
	XORQ R10, R10

gatherrun:
	MOVQ (R9)(R10*8), R13
	ADDQ R14, R13
	XORQ AX, AX

gather64:
	CMPQ      AX, R15
	JGE       gathertail
	VMOVDQU8  (R13)(AX*1), Z4
	VMOVDQU8  Z4, (DX)(AX*1)
	ADDQ      $64, AX
	JMP       gather64

gathertail:
	CMPQ       AX, CX
	JGE        gatherend
	VMOVDQU8.Z (R13)(AX*1), K2, Z4
	VMOVDQU8   Z4, K2, (DX)(AX*1)

gatherend:
	ADDQ CX, DX
	INCQ R10
	CMPQ R10, offs_len+56(FP)
	JLT  gatherrun
	ADDQ ldu+104(FP), DI
	INCQ BX
	JMP  gatherrow

gatherdone:
	VZEROUPPER
	RET
