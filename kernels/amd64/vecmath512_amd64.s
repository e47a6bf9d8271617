//go:build gc && !purego

#include "textflag.h"

// The vector math of vecmath_amd64.s on zmm, 16 lanes: every lane runs
// kernels/vecmath.go's float32 operations in its order, with separate
// multiplies and adds except GELU's, which are fused where the reference
// calls kernels.FMA32, so the results are the reference's bits.
// Only AVX-512 F instructions are used (VPANDD and VPXORD where AVX2 has
// VANDPS and VXORPS, opmasks where it blends). R8 points at
// kernels.VecConsts(): row r is 8 lanes at r*32(R8); a value broadcast
// over 8 lanes is read by VBROADCASTSS or an embedded broadcast (.BCST).

#define C_LOG2E 0(R8)
#define C_MAGIC 32(R8)
#define C_LN2HI 64(R8)
#define C_LN2LO 96(R8)
#define C_P0 128(R8)
#define C_P1 160(R8)
#define C_P2 192(R8)
#define C_P3 224(R8)
#define C_P4 256(R8)
#define C_P5 288(R8)
#define C_EXPMIN 320(R8)
#define C_EXPBIAS 352(R8)
#define C_ONE 384(R8)
#define C_TWO 416(R8)
#define C_HALF 448(R8)
#define C_ABS 480(R8)
#define C_SIGN 544(R8)
#define C_NEGINF 576(R8)
#define C_INVSQ2 608(R8)
#define C_MAXX 640(R8)
#define C_GSCALE 672(R8)
#define C_GOFF 704(R8)
#define C_GPIECE 736(R8)
#define C_NEGHALF 768(R8)
#define C_G0 800(R8)
#define C_G1 832(R8)
#define C_G2 864(R8)
#define C_G3 896(R8)
#define C_G4 928(R8)
#define C_G5 960(R8)
#define C_G6 992(R8)
#define C_G7 1024(R8)
#define C_TSMALL 1184(R8)
#define C_TC0 1216(R8)
#define C_TC1 1248(R8)
#define C_TC2 1280(R8)
#define C_TC3 1312(R8)
#define C_TC4 1344(R8)
#define C_TC5 1376(R8)
#define C_TC6 1408(R8)
#define C_TC7 1440(R8)
#define C_TC8 1472(R8)
#define C_GELUA 1504(R8)
#define C_GELUK 1536(R8)

// EXPCONSTS broadcasts ExpNeg's constants into Z16..Z28 (Z28: 1).
#define EXPCONSTS \
	VBROADCASTSS C_LOG2E, Z16 \
	VBROADCASTSS C_MAGIC, Z17 \
	VBROADCASTSS C_LN2HI, Z18 \
	VBROADCASTSS C_LN2LO, Z19 \
	VBROADCASTSS C_P0, Z20 \
	VBROADCASTSS C_P1, Z21 \
	VBROADCASTSS C_P2, Z22 \
	VBROADCASTSS C_P3, Z23 \
	VBROADCASTSS C_P4, Z24 \
	VBROADCASTSS C_P5, Z25 \
	VBROADCASTSS C_EXPMIN, Z26 \
	VBROADCASTSS C_EXPBIAS, Z27 \
	VBROADCASTSS C_ONE, Z28

// EXPNEG1 and EXPNEG2, one after the other, set D = kernels.ExpNeg(D)
// lane by lane, with EXPCONSTS in Z16..Z28; T1..T5 and K are clobbered.
// As vecmath_amd64.s's EXPNEG, except that the lanes with d < ExpNegMin
// (K clear; NaN sets it) are zeroed by the last multiply. Two halves, so
// that two vectors' chains can alternate.
#define EXPNEG1(D, T1, T2, T3, T4, T5, K) \
	EXPREDUCE5(D, T1, T2, T3, K) \
	EXPSTART5(T2, T3, T4)

// EXPREDUCE5 is EXPNEG1's reduction: K = d >= ExpNegMin (or NaN),
// T1 = 2^k, T3 = r; EXPSTART5 begins the polynomial from r.
#define EXPREDUCE5(D, T1, T2, T3, K) \
	VCMPPS   $5, Z26, D, K \
	VMULPS   Z16, D, T1 \
	VADDPS   Z17, T1, T1 \
	VSUBPS   Z17, T1, T2 \
	VPSUBD   Z27, T1, T1 \
	VPSLLD   $23, T1, T1 \
	VMULPS   Z18, T2, T3 \
	VSUBPS   T3, D, T3 \
	VMULPS   Z19, T2, T2 \
	VSUBPS   T2, T3, T3

#define EXPSTART5(T2, T3, T4) \
	VMULPS   T3, T3, T2 \
	VMULPS   Z20, T3, T4 \
	VADDPS   Z21, T4, T4

#define EXPNEG2(D, T1, T2, T3, T4, T5, K) \
	VMULPS   Z22, T3, T5 \
	VADDPS   Z23, T5, T5 \
	VMULPS   T2, T4, T4 \
	VADDPS   T5, T4, T4 \
	VMULPS   T2, T4, T4 \
	VMULPS   Z24, T3, T5 \
	VADDPS   Z25, T5, T5 \
	VADDPS   T5, T4, T4 \
	VMULPS   T2, T4, T4 \
	VADDPS   T3, T4, T4 \
	VADDPS   Z28, T4, T4 \
	VMULPS.Z T1, T4, K, D

// EXPNEGLO1 is EXPNEG1 for the argument D + L (L the low part of an
// argument computed to more than float32's precision, kernels.expNegLo):
// L is added to the reduced argument. EXPNEG2 finishes it.
#define EXPNEGLO1(D, L, T1, T2, T3, T4, T5, K) \
	EXPREDUCE5(D, T1, T2, T3, K) \
	VADDPS   L, T3, T3 \
	EXPSTART5(T2, T3, T4)

// TAILMASK sets K1 to the lanes of the next 16 values of DX left: all,
// or the last DX mod 16 (CX and R11 clobbered).
#define TAILMASK \
	MOVL  $0xffff, R11 \
	CMPQ  DX, $16      \
	JGE   5(PC)        \
	MOVQ  DX, CX       \
	MOVL  $1, R11      \
	SHLL  CX, R11      \
	DECL  R11          \
	KMOVW R11, K1

// HORNER is one step of Horner's scheme on zmm: P = P·Z + c, c read by
// an embedded broadcast.
#define HORNER(P, Z, c) \
	VMULPS      Z, P, P \
	VADDPS.BCST c, P, P

// func maxScaledAVX512(x []float32, scale float32, c *[37][8]float32) float32
// len(x) is a positive multiple of 8. Two zmm maxima take alternate 16s,
// a last 8 goes to their ymm fold; the order does not matter to a maximum
// (a NaN y leaves m, as in maxScaledAVX2).
TEXT ·maxScaledAVX512(SB), NOSPLIT, $0-44
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS scale+24(FP), Z14
	MOVQ         c+32(FP), R8
	VBROADCASTSS C_NEGINF, Z15
	VMOVAPS      Z15, Z13

max32:
	CMPQ   DX, $32
	JLT    max16
	VMULPS (SI), Z14, Z0
	VMULPS 64(SI), Z14, Z1
	VMAXPS Z15, Z0, Z15    // m = y > m ? y : m
	VMAXPS Z13, Z1, Z13
	ADDQ   $128, SI
	SUBQ   $32, DX
	JMP    max32

max16:
	CMPQ   DX, $16
	JLT    max8
	VMULPS (SI), Z14, Z0
	VMAXPS Z15, Z0, Z15
	ADDQ   $64, SI
	SUBQ   $16, DX

max8:
	VMAXPS         Z13, Z15, Z15
	VEXTRACTF64X4  $1, Z15, Y1
	VMAXPS         Y1, Y15, Y15
	TESTQ          DX, DX
	JZ             maxfold
	VMULPS         (SI), Y14, Y0
	VMAXPS         Y15, Y0, Y15

maxfold:
	VEXTRACTF128 $1, Y15, X1
	VMAXPS       X1, X15, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	MOVSS        X0, ret+40(FP)
	VZEROUPPER
	RET

// func expSumAVX512(x []float32, scale, m float32, c *[37][8]float32) float32
// len(x) is a positive multiple of 8.
//   x[j] = ExpNeg(scale·x[j] - m); the zmm accumulator Z12 holds
//   kernels.ExpSumLanes' two 8-lane accumulators side by side (blocks 2b
//   in lanes 0-7, 2b+1 in lanes 8-15), so adding 16 values adds a block
//   to each; a last block (even) goes to the low half, then the halves
//   are added and folded 8 → 4 → 2 → 1 as expSumAVX2 does.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-44
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS scale+24(FP), Z14
	VBROADCASTSS m+28(FP), Z15
	MOVQ         c+32(FP), R8
	EXPCONSTS
	VPXORD       Z12, Z12, Z12

exp32:
	CMPQ    DX, $32
	JLT     exp16
	VMULPS  (SI), Z14, Z0
	VMULPS  64(SI), Z14, Z6
	VSUBPS  Z15, Z0, Z0
	VSUBPS  Z15, Z6, Z6
	EXPNEG1(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	EXPNEG1(Z6, Z7, Z8, Z9, Z10, Z11, K3)
	EXPNEG2(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	EXPNEG2(Z6, Z7, Z8, Z9, Z10, Z11, K3)
	VMOVUPS Z0, (SI)
	VMOVUPS Z6, 64(SI)
	VADDPS  Z0, Z12, Z12 // the accumulator takes the 16s in order
	VADDPS  Z6, Z12, Z12
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     exp32

exp16:
	CMPQ DX, $16
	JLT  exptail

expone:
	VMULPS  (SI), Z14, Z0
	VSUBPS  Z15, Z0, Z0
	EXPNEG1(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	EXPNEG2(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	VMOVUPS Z0, (SI)
	VADDPS  Z0, Z12, Z12
	ADDQ    $64, SI
	SUBQ    $16, DX

exptail:
	VEXTRACTF64X4 $1, Z12, Y13 // the odd blocks' lanes
	TESTQ         DX, DX
	JZ            expfold
	VMULPS        (SI), Y14, Y0 // upper lanes zeroed: computed, not stored
	VSUBPS        Y15, Y0, Y0
	EXPNEG1(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	EXPNEG2(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	VMOVUPS       Y0, (SI)
	VADDPS        Y0, Y12, Y12

expfold:
	VADDPS       Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X1
	VADDPS       X1, X12, X0   // lane i + lane i+4
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0    // + 2 lanes on
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0    // + 1 lane on
	MOVSS        X0, ret+40(FP)
	VZEROUPPER
	RET

// func scaleAVX512(x []float32, s float32)
// x[j] *= s for every j, 32 then 16 at a time, the last len(x) mod 16
// under a mask.
TEXT ·scaleAVX512(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS s+24(FP), Z15

scale32:
	CMPQ    DX, $32
	JLT     scale16
	VMULPS  (SI), Z15, Z0
	VMULPS  64(SI), Z15, Z1
	VMOVUPS Z0, (SI)
	VMOVUPS Z1, 64(SI)
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     scale32

scale16:
	CMPQ    DX, $16
	JLT     scaletail
	VMULPS  (SI), Z15, Z0
	VMOVUPS Z0, (SI)
	ADDQ    $64, SI
	SUBQ    $16, DX

scaletail:
	TESTQ     DX, DX
	JZ        scaledone
	MOVQ      DX, CX
	MOVL      $1, R11
	SHLL      CX, R11
	DECL      R11
	KMOVW     R11, K1
	VMOVUPS.Z (SI), K1, Z0 // lanes past the end read as 0, touching nothing
	VMULPS    Z15, Z0, Z0
	VMOVUPS   Z0, K1, (SI)

scaledone:
	VZEROUPPER
	RET

// func addBiasAVX512(y, bias, res []float32)
// len(bias) >= len(y); res is empty or at least as long as y.
//   y[j] = (y[j] + bias[j]) + res[j], 32 then 16 at a time, the last
//   len(y) mod 16 under a mask.
TEXT ·addBiasAVX512(SB), NOSPLIT, $0-72
	MOVQ  y_base+0(FP), DI
	MOVQ  y_len+8(FP), DX
	MOVQ  bias_base+24(FP), BX
	MOVQ  res_base+48(FP), SI
	MOVQ  res_len+56(FP), AX
	TESTQ AX, AX
	JNZ   res32

add32:
	CMPQ    DX, $32
	JLT     add16
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VADDPS  (BX), Z0, Z0
	VADDPS  64(BX), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, DI
	ADDQ    $128, BX
	SUBQ    $32, DX
	JMP     add32

add16:
	CMPQ    DX, $16
	JLT     addtail
	VMOVUPS (DI), Z0
	VADDPS  (BX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, BX
	SUBQ    $16, DX

addtail:
	TESTQ     DX, DX
	JZ        adddone
	MOVQ      DX, CX
	MOVL      $1, R11
	SHLL      CX, R11
	DECL      R11
	KMOVW     R11, K1
	VMOVUPS.Z (DI), K1, Z0 // lanes past the end read as 0, touching nothing
	VADDPS.Z  (BX), Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)

adddone:
	VZEROUPPER
	RET

res32:
	CMPQ    DX, $32
	JLT     res16
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VADDPS  (BX), Z0, Z0
	VADDPS  64(BX), Z1, Z1
	VADDPS  (SI), Z0, Z0
	VADDPS  64(SI), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, DI
	ADDQ    $128, BX
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     res32

res16:
	CMPQ    DX, $16
	JLT     restail
	VMOVUPS (DI), Z0
	VADDPS  (BX), Z0, Z0
	VADDPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, BX
	ADDQ    $64, SI
	SUBQ    $16, DX

restail:
	TESTQ     DX, DX
	JZ        adddone
	MOVQ      DX, CX
	MOVL      $1, R11
	SHLL      CX, R11
	DECL      R11
	KMOVW     R11, K1
	VMOVUPS.Z (DI), K1, Z0
	VADDPS.Z  (BX), Z0, K1, Z0
	VADDPS.Z  (SI), Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)
	JMP       adddone

// GELU in stages, each on one vector's registers, so that three vectors'
// stages can alternate (the dependency chains are long; three in flight
// keep the FP pipes busier than two: 0.61 ns a value against 0.64 on a
// Zen 4). Registers of a vector: X the input (then the
// output), HI (then d, then r), LO (then r²), A, IX, T, G, C, E1, E2;
// KE and KS its opmasks. Z30 holds 1/2, Z31 0. VPERMPS reads a per-piece
// row 16 lanes at a time, the row and the next; the piece, 0 to 6,
// picks a lane of the row's own 8.

// GELU1: xa = min(|x|, maxX); hi = xa·xa, lo = xa·xa - hi in one FMA;
// A = a = xa/√2; IX = (bits(a + 1) >> 22) - 254, the piece.
#define GELU1(X, HI, LO, A, IX) \
	VPANDD.BCST C_ABS, X, A \
	VMINPS.BCST C_MAXX, A, A \
	VMULPS      A, A, HI \
	VMOVAPS     HI, LO \
	VFMSUB231PS A, A, LO \
	VMULPS.BCST C_INVSQ2, A, A \
	VADDPS.BCST C_ONE, A, IX \
	VPSRLD      $22, IX, IX \
	VPSUBD.BCST C_GPIECE, IX, IX

// GELU2: t = fma(a, scale, off); G = c7, then three Horner steps
// g = fma(g, t, c[k]) for k = 6, 5, 4.
#define GELU2(A, IX, T, G, C) \
	VPERMPS     C_GOFF, IX, T \
	VPERMPS     C_GSCALE, IX, C \
	VFMADD231PS C, A, T \
	VPERMPS     C_G7, IX, G \
	VPERMPS     C_G6, IX, C \
	VFMADD213PS C, T, G \
	VPERMPS     C_G5, IX, C \
	VFMADD213PS C, T, G \
	VPERMPS     C_G4, IX, C \
	VFMADD213PS C, T, G

// GELU3: the Horner steps for k = 3, 2, 1, 0: G = g(t).
#define GELU3(IX, T, G, C) \
	VPERMPS     C_G3, IX, C \
	VFMADD213PS C, T, G \
	VPERMPS     C_G2, IX, C \
	VFMADD213PS C, T, G \
	VPERMPS     C_G1, IX, C \
	VFMADD213PS C, T, G \
	VPERMPS     C_G0, IX, C \
	VFMADD213PS C, T, G

// GELUEXP1: d = -hi/2 (in HI); KE = d >= ExpNegMin; t = fma(d, log2e,
// magic); E1 = 2^k; n = t - magic; r = fma(n, -ln2hi, d), then
// fma(n, -ln2lo, r), then fma(lo, -1/2, r) (in HI).
#define GELUEXP1(HI, LO, E1, E2, KE) \
	VMULPS.BCST       C_NEGHALF, HI, HI \
	VCMPPS.BCST       $5, C_EXPMIN, HI, KE \
	VBROADCASTSS      C_MAGIC, E1 \
	VFMADD231PS.BCST  C_LOG2E, HI, E1 \
	VSUBPS.BCST       C_MAGIC, E1, E2 \
	VPSUBD.BCST       C_EXPBIAS, E1, E1 \
	VPSLLD            $23, E1, E1 \
	VFNMADD231PS.BCST C_LN2HI, E2, HI \
	VFNMADD231PS.BCST C_LN2LO, E2, HI \
	VFNMADD231PS      Z30, LO, HI

// GELUEXP2: p = P(r) by Horner's scheme in FMAs; y = fma(p, r², r) + 1;
// E2 = y·2^k, 0 where d < ExpNegMin.
#define GELUEXP2(HI, LO, E1, E2, KE) \
	VBROADCASTSS     C_P1, E2 \
	VFMADD231PS.BCST C_P0, HI, E2 \
	VFMADD213PS.BCST C_P2, HI, E2 \
	VFMADD213PS.BCST C_P3, HI, E2 \
	VFMADD213PS.BCST C_P4, HI, E2 \
	VFMADD213PS.BCST C_P5, HI, E2 \
	VMULPS           HI, HI, LO \
	VFMADD213PS      HI, LO, E2 \
	VADDPS.BCST      C_ONE, E2, E2 \
	VMULPS.Z         E1, E2, KE, E2

// GELU4: e = g·e**(-a²) = erfc(a); X = (x/2)·(x >= 0 ? 2 - e : e).
#define GELU4(X, G, E2, C, KS) \
	VMULPS       E2, G, G \
	VCMPPS       $13, Z31, X, KS \
	VBROADCASTSS C_TWO, C \
	VSUBPS       G, C, KS, G \
	VMULPS       Z30, X, X \
	VMULPS       G, X, X

// The stages of one vector: A in Z0..Z9 with K2, K3; B in Z10..Z19
// with K4, K5; C in Z20..Z29 with K6, K7.
#define GELU_A1 GELU1(Z0, Z1, Z2, Z3, Z4)
#define GELU_A2 GELUEXP1(Z1, Z2, Z8, Z9, K2)
#define GELU_A3 GELU2(Z3, Z4, Z5, Z6, Z7)
#define GELU_A4 GELUEXP2(Z1, Z2, Z8, Z9, K2)
#define GELU_A5 GELU3(Z4, Z5, Z6, Z7)
#define GELU_A6 GELU4(Z0, Z6, Z9, Z7, K3)
#define GELU_B1 GELU1(Z10, Z11, Z12, Z13, Z14)
#define GELU_B2 GELUEXP1(Z11, Z12, Z18, Z19, K4)
#define GELU_B3 GELU2(Z13, Z14, Z15, Z16, Z17)
#define GELU_B4 GELUEXP2(Z11, Z12, Z18, Z19, K4)
#define GELU_B5 GELU3(Z14, Z15, Z16, Z17)
#define GELU_B6 GELU4(Z10, Z16, Z19, Z17, K5)
#define GELU_C1 GELU1(Z20, Z21, Z22, Z23, Z24)
#define GELU_C2 GELUEXP1(Z21, Z22, Z28, Z29, K6)
#define GELU_C3 GELU2(Z23, Z24, Z25, Z26, Z27)
#define GELU_C4 GELUEXP2(Z21, Z22, Z28, Z29, K6)
#define GELU_C5 GELU3(Z24, Z25, Z26, Z27)
#define GELU_C6 GELU4(Z20, Z26, Z29, Z27, K7)

// func geluAVX512(dst, src, bias []float32, c *[37][8]float32)
// len(dst) >= len(src); bias is empty or at least as long as src. Per
// lane, as geluAVX2 (and kernels.GeluOne), every FMA32 of the reference
// one fused instruction:
//   xa = min(|x|, maxX); x² = hi + lo, lo = fma(xa, xa, -hi)
//   a = xa/√2; piece i = (bits(a + 1) >> 22) - 254; t = fma(a, scale[i], off[i])
//   g = Σ c[i][k]·t^k by Horner's scheme
//   e = g·e**(-hi/2 - lo/2) = erfc(a)
//   gelu = (x/2)·(x >= 0 ? 2 - e : e)
// 48 at a time as three vectors whose stages alternate, then 16 at a time
// under the mask K1: all lanes, then the last len(src) mod 16 (lanes past
// the end compute gelu(0) and are neither read nor stored).
TEXT ·geluAVX512(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	MOVQ         bias_base+48(FP), BX
	MOVQ         bias_len+56(FP), AX
	MOVQ         c+72(FP), R8
	VBROADCASTSS C_HALF, Z30
	VPXORD       Z31, Z31, Z31

gelu48:
	CMPQ    DX, $48
	JLT     gelu16
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z10
	VMOVUPS 128(SI), Z20
	TESTQ   AX, AX
	JZ      gelu48nobias
	VADDPS  (BX), Z0, Z0
	VADDPS  64(BX), Z10, Z10
	VADDPS  128(BX), Z20, Z20
	ADDQ    $192, BX

gelu48nobias:
	GELU_A1
	GELU_B1
	GELU_C1
	GELU_A2
	GELU_B2
	GELU_C2
	GELU_A3
	GELU_B3
	GELU_C3
	GELU_A4
	GELU_B4
	GELU_C4
	GELU_A5
	GELU_B5
	GELU_C5
	GELU_A6
	GELU_B6
	GELU_C6
	VMOVUPS Z0, (DI)
	VMOVUPS Z10, 64(DI)
	VMOVUPS Z20, 128(DI)
	ADDQ    $192, SI
	ADDQ    $192, DI
	SUBQ    $48, DX
	JMP     gelu48

gelu16:
	TESTQ     DX, DX
	JZ        geludone
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0 // lanes past the end read as 0, touching nothing
	TESTQ     AX, AX
	JZ        gelu16nobias
	VADDPS.Z  (BX), Z0, K1, Z0
	ADDQ      $64, BX

gelu16nobias:
	GELU_A1
	GELU_A2
	GELU_A3
	GELU_A4
	GELU_A5
	GELU_A6
	VMOVUPS Z0, K1, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, DX
	JG      gelu16

geludone:
	VZEROUPPER
	RET

// SIGMOIDFRAC sets Z4 = (S < 0 ? E : 1) / (1 + E), the logistic
// function of a value of S's sign from E = e**-|value|, as
// kernels.SigmoidOne ends (Z28 holds 1, Z31 0; Z2 and K3 are clobbered).
#define SIGMOIDFRAC(E, S) \
	VADDPS  E, Z28, Z2 \
	VCMPPS  $1, Z31, S, K3 \
	VMOVAPS Z28, Z4 \
	VMOVAPS E, K3, Z4 \
	VDIVPS  Z2, Z4, Z4

// func sigmoidAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(dst) >= len(src). As sigmoidAVX2, 16 at a time under the mask K1:
// all lanes, then the last len(src) mod 16 (lanes past the end compute
// sigmoid(0) and are neither read nor stored).
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	MOVQ         c+48(FP), R8
	EXPCONSTS
	VBROADCASTSS C_ABS, Z29
	VBROADCASTSS C_SIGN, Z30
	VPXORD       Z31, Z31, Z31
	TESTQ        DX, DX
	JZ           sigmoiddone

sigmoid16:
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VPANDD    Z29, Z0, Z1
	VPXORD    Z30, Z1, Z1                  // -|x|
	EXPNEG1(Z1, Z2, Z3, Z4, Z5, Z6, K2)
	EXPNEG2(Z1, Z2, Z3, Z4, Z5, Z6, K2)    // e
	SIGMOIDFRAC(Z1, Z0)
	VMOVUPS   Z4, K1, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, DX
	JG        sigmoid16

sigmoiddone:
	VZEROUPPER
	RET

// func tanhAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(dst) >= len(src). As tanhAVX2, 16 at a time under the mask K1 (lanes
// past the end compute tanh(0) and are neither read nor stored).
TEXT ·tanhAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	MOVQ         c+48(FP), R8
	EXPCONSTS
	VBROADCASTSS C_ABS, Z29
	VBROADCASTSS C_SIGN, Z30
	VBROADCASTSS C_TC8, Z31
	TESTQ        DX, DX
	JZ           tanhdone

tanh16:
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VPANDD    Z29, Z0, Z1                  // a
	VADDPS    Z1, Z1, Z2
	VPXORD    Z30, Z2, Z2                  // -(a + a)
	EXPNEG1(Z2, Z3, Z4, Z5, Z6, Z7, K2)
	EXPNEG2(Z2, Z3, Z4, Z5, Z6, Z7, K2)    // e
	VSUBPS    Z2, Z28, Z3                  // 1 - e
	VADDPS    Z2, Z28, Z4                  // 1 + e
	VDIVPS    Z4, Z3, Z3

	VMULPS      Z1, Z1, Z2 // z
	VMOVAPS     Z31, Z4
	HORNER(Z4, Z2, C_TC7)
	HORNER(Z4, Z2, C_TC6)
	HORNER(Z4, Z2, C_TC5)
	HORNER(Z4, Z2, C_TC4)
	HORNER(Z4, Z2, C_TC3)
	HORNER(Z4, Z2, C_TC2)
	HORNER(Z4, Z2, C_TC1)
	HORNER(Z4, Z2, C_TC0)
	VMULPS      Z2, Z1, Z5                 // a·z
	VMULPS      Z4, Z5, Z5                 // (a·z)·P
	VADDPS      Z5, Z1, Z5                 // a + (a·z)·P

	VCMPPS.BCST $1, C_TSMALL, Z1, K3       // a < 0.625 (false for NaN)
	VMOVAPS     Z5, K3, Z3
	VPANDD      Z30, Z0, Z0
	VPORD       Z0, Z3, Z3
	VMOVUPS     Z3, K1, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, DX
	JG          tanh16

tanhdone:
	VZEROUPPER
	RET

// GELUT8 computes t = K·(X + A·X³) in float64 for the 8 float64 lanes of
// X (Z14: A, Z15: K), into T; X is kept.
#define GELUT8(X, T) \
	VMULPD X, X, T \
	VMULPD X, T, T \
	VMULPD Z14, T, T \
	VADDPD X, T, T \
	VMULPD Z15, T, T

// func geluTanhAVX512(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(dst) >= len(src). Per lane, as kernels.GeluTanhOne: t in float64
// (each half of the 16 lanes in a zmm of float64), split into float32
// hi + lo; e = e**-|t| by EXPNEGLO1/EXPNEG2 on (-|hi|, ±lo); then
// x·((hi < 0 ? e : 1)/(1 + e)). 16 at a time under the mask K1 (lanes past
// the end compute on 0 and are neither read nor stored).
TEXT ·geluTanhAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	MOVQ         c+48(FP), R8
	EXPCONSTS
	VBROADCASTSD C_GELUA, Z14
	VBROADCASTSD C_GELUK, Z15
	VBROADCASTSS C_SIGN, Z30
	VPXORD       Z31, Z31, Z31
	TESTQ        DX, DX
	JZ           gelutdone

gelut16:
	TAILMASK
	VMOVUPS.Z     (SI), K1, Z0
	VCVTPS2PD     Y0, Z1
	VEXTRACTF64X4 $1, Z0, Y2
	VCVTPS2PD     Y2, Z2
	GELUT8(Z1, Z3)                 // t, lanes 0-7
	GELUT8(Z2, Z4)                 // t, lanes 8-15
	VCVTPD2PS     Z3, Y5           // hi
	VCVTPD2PS     Z4, Y6
	VCVTPS2PD     Y5, Z7
	VSUBPD        Z7, Z3, Z3
	VCVTPD2PS     Z3, Y3           // lo = t - hi
	VCVTPS2PD     Y6, Z7
	VSUBPD        Z7, Z4, Z4
	VCVTPD2PS     Z4, Y4
	VINSERTF64X4  $1, Y6, Z5, Z5   // hi, 16 lanes
	VINSERTF64X4  $1, Y4, Z3, Z3   // lo, 16 lanes
	VPORD         Z30, Z5, Z6      // -|hi|
	VPANDND       Z30, Z5, Z7      // the sign bit where hi's is clear
	VPXORD        Z7, Z3, Z3       // the low part of -|t|
	EXPNEGLO1(Z6, Z3, Z8, Z9, Z10, Z11, Z12, K2)
	EXPNEG2(Z6, Z8, Z9, Z10, Z11, Z12, K2) // e
	SIGMOIDFRAC(Z6, Z5)
	VMULPS        Z4, Z0, Z4
	VMOVUPS       Z4, K1, (DI)
	ADDQ          $64, SI
	ADDQ          $64, DI
	SUBQ          $16, DX
	JG            gelut16

gelutdone:
	VZEROUPPER
	RET
