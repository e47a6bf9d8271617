//go:build gc && !purego

#include "textflag.h"

// Vector math of the transformer paths (kernels/vecmath.go is the spec):
// every lane runs the reference's float32 operations in its order, with
// separate multiplies and adds (no FMA but one for GELU's error of x²,
// whose bits are the reference's too: see GELU1 in vecmath512_amd64.s),
// so the results are the reference's bits. CX points at
// kernels.VecConsts(): row r is 8 lanes at r*32(CX).

#define C_LOG2E 0(CX)
#define C_MAGIC 32(CX)
#define C_LN2HI 64(CX)
#define C_LN2LO 96(CX)
#define C_P0 128(CX)
#define C_P1 160(CX)
#define C_P2 192(CX)
#define C_P3 224(CX)
#define C_P4 256(CX)
#define C_P5 288(CX)
#define C_EXPMIN 320(CX)
#define C_EXPBIAS 352(CX)
#define C_ONE 384(CX)
#define C_TWO 416(CX)
#define C_HALF 448(CX)
#define C_ABS 480(CX)
#define C_SIGN 544(CX)
#define C_NEGINF 576(CX)
#define C_INVSQ2 608(CX)
#define C_MAXX 640(CX)
#define C_BOUND0 672(CX)
#define C_BOUND1 704(CX)
#define C_BOUND2 736(CX)
#define C_BOUND3 768(CX)
#define C_MID 800(CX)
#define C_SCALE 832(CX)
#define C_C0 864(CX)
#define C_C1 896(CX)
#define C_C2 928(CX)
#define C_C3 960(CX)
#define C_C4 992(CX)
#define C_C5 1024(CX)
#define C_C6 1056(CX)
#define C_C7 1088(CX)
#define C_C8 1120(CX)
#define C_C9 1152(CX)
#define C_TSMALL 1184(CX)
#define C_TC0 1216(CX)
#define C_TC1 1248(CX)
#define C_TC2 1280(CX)
#define C_TC3 1312(CX)
#define C_TC4 1344(CX)
#define C_TC5 1376(CX)
#define C_TC6 1408(CX)
#define C_TC7 1440(CX)
#define C_TC8 1472(CX)
#define C_GELUA 1504(CX)
#define C_GELUK 1536(CX)

// EXPNEG sets D = kernels.ExpNeg(D) lane by lane; T1..T5 are clobbered.
//   t = d·log2e + magic; n = t - magic; 2^k from t's bits
//   r = (d - n·ln2hi) - n·ln2lo; r2 = r·r
//   p = ((p0·r + p1)·r2 + (p2·r + p3))·r2 + (p4·r + p5)
//   e = ((p·r2 + r) + 1)·2^k; lanes with d < ExpNegMin become 0 (NaN
//   stays NaN)
#define EXPNEG(D, T1, T2, T3, T4, T5) \
	EXPREDUCE(D, T1, T2, T3) \
	EXPPOLY(D, T1, T2, T3, T4, T5)

// EXPNEGLO is EXPNEG for the argument D + L (L the low part of an
// argument computed to more than float32's precision, kernels.expNegLo):
// L is added to the reduced argument; the lanes are zeroed by D alone.
#define EXPNEGLO(D, L, T1, T2, T3, T4, T5) \
	EXPREDUCE(D, T1, T2, T3) \
	VADDPS L, T3, T3 \
	EXPPOLY(D, T1, T2, T3, T4, T5)

// EXPREDUCE is EXPNEG's first half: T1 = 2^k, T3 = r.
#define EXPREDUCE(D, T1, T2, T3) \
	VMULPS  C_LOG2E, D, T1 \
	VADDPS  C_MAGIC, T1, T1 \
	VSUBPS  C_MAGIC, T1, T2 \
	VPSUBD  C_EXPBIAS, T1, T1 \
	VPSLLD  $23, T1, T1 \
	VMULPS  C_LN2HI, T2, T3 \
	VSUBPS  T3, D, T3 \
	VMULPS  C_LN2LO, T2, T2 \
	VSUBPS  T2, T3, T3

// EXPPOLY is EXPNEG's second half, from 2^k in T1 and r in T3.
#define EXPPOLY(D, T1, T2, T3, T4, T5) \
	VMULPS  T3, T3, T2 \
	VMULPS  C_P0, T3, T4 \
	VADDPS  C_P1, T4, T4 \
	VMULPS  C_P2, T3, T5 \
	VADDPS  C_P3, T5, T5 \
	VMULPS  T2, T4, T4 \
	VADDPS  T5, T4, T4 \
	VMULPS  T2, T4, T4 \
	VMULPS  C_P4, T3, T5 \
	VADDPS  C_P5, T5, T5 \
	VADDPS  T5, T4, T4 \
	VMULPS  T2, T4, T4 \
	VADDPS  T3, T4, T4 \
	VADDPS  C_ONE, T4, T4 \
	VMULPS  T1, T4, T4 \
	VCMPPS  $5, C_EXPMIN, D, D \
	VANDPS  T4, D, D

// func maxScaledAVX2(x []float32, scale float32, c *[37][8]float32) float32
// len(x) is a positive multiple of 8.
TEXT ·maxScaledAVX2(SB), NOSPLIT, $0-44
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS scale+24(FP), Y14
	MOVQ         c+32(FP), CX
	VMOVUPS      C_NEGINF, Y15

maxloop:
	VMULPS (SI), Y14, Y0
	VMAXPS Y15, Y0, Y15  // m = y > m ? y : m (a NaN y leaves m)
	ADDQ   $32, SI
	SUBQ   $8, DX
	JNZ    maxloop

	VEXTRACTF128 $1, Y15, X1
	VMAXPS       X1, X15, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	MOVSS        X0, ret+40(FP)
	VZEROUPPER
	RET

// func expSumAVX2(x []float32, scale, m float32, c *[37][8]float32) float32
// len(x) is a positive multiple of 8.
//   x[j] = ExpNeg(scale·x[j] - m); blocks of 8 alternate between the
//   accumulators Y12 and Y13, which are added and folded 8 → 4 → 2 → 1.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-44
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS m+28(FP), Y15
	MOVQ         c+32(FP), CX
	VXORPS       Y12, Y12, Y12
	VXORPS       Y13, Y13, Y13
	CMPQ         DX, $16
	JLT          exptail

exploop:
	VMULPS (SI), Y14, Y0
	VSUBPS Y15, Y0, Y0
	VMULPS 32(SI), Y14, Y6
	VSUBPS Y15, Y6, Y6
	EXPNEG(Y0, Y1, Y2, Y3, Y4, Y5)
	EXPNEG(Y6, Y7, Y8, Y9, Y10, Y11)
	VMOVUPS Y0, (SI)
	VMOVUPS Y6, 32(SI)
	VADDPS  Y0, Y12, Y12
	VADDPS  Y6, Y13, Y13
	ADDQ    $64, SI
	SUBQ    $16, DX
	CMPQ    DX, $16
	JGE     exploop

exptail:
	TESTQ DX, DX
	JZ    expfold
	VMULPS (SI), Y14, Y0
	VSUBPS Y15, Y0, Y0
	EXPNEG(Y0, Y1, Y2, Y3, Y4, Y5)
	VMOVUPS Y0, (SI)
	VADDPS  Y0, Y12, Y12

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

// func scaleAVX2(x []float32, s float32)
// len(x) is a positive multiple of 8.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), DX
	VBROADCASTSS s+24(FP), Y15

scaleloop:
	VMULPS  (SI), Y15, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, DX
	JNZ     scaleloop
	VZEROUPPER
	RET

// func addBiasAVX2(y, bias, res []float32)
// len(y) is a positive multiple of 8; len(bias) >= len(y); res is empty
// or as long as y.
//   y[j] = (y[j] + bias[j]) + res[j]
TEXT ·addBiasAVX2(SB), NOSPLIT, $0-72
	MOVQ  y_base+0(FP), DI
	MOVQ  y_len+8(FP), DX
	MOVQ  bias_base+24(FP), BX
	MOVQ  res_base+48(FP), SI
	MOVQ  res_len+56(FP), AX
	TESTQ AX, AX
	JNZ   addres

addloop:
	VMOVUPS (DI), Y0
	VADDPS  (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, BX
	SUBQ    $8, DX
	JNZ     addloop
	VZEROUPPER
	RET

addres:
	VMOVUPS (DI), Y0
	VADDPS  (BX), Y0, Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, BX
	ADDQ    $32, SI
	SUBQ    $8, DX
	JNZ     addres
	VZEROUPPER
	RET

// func geluAVX2(dst, src, bias []float32, c *[37][8]float32)
// len(src) is a positive multiple of 8, len(dst) >= len(src); bias is
// empty or at least as long as src. Per lane, as kernels.GeluOne:
//   xa = min(|x|, maxX); x² = hi + lo, lo = xa·xa - hi in one FMA
//   a = xa/√2; piece i = #bounds <= a; t = (a - mid[i])·scale[i]
//   g = Σ c[i][k]·t^k by Estrin's scheme
//   e = (g·ExpNeg(-hi/2))·(1 - lo/2) = erfc(a)
//   gelu = (x/2)·(x >= 0 ? 2 - e : e)
TEXT ·geluAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	MOVQ bias_base+48(FP), BX
	MOVQ bias_len+56(FP), AX
	MOVQ c+72(FP), CX

geluloop:
	VMOVUPS (SI), Y0
	TESTQ   AX, AX
	JZ      gelunobias
	VADDPS  (BX), Y0, Y0
	ADDQ    $32, BX

gelunobias:
	VANDPS C_ABS, Y0, Y1  // |x|
	VMINPS C_MAXX, Y1, Y1 // xa = |x| < maxX ? |x| : maxX (NaN too)

	// x² = hi + lo: lo = xa·xa - hi in one FMA, 1 - lo/2 as the
	// reference's split of xa into 12-bit halves gives it (see GELU1 in
	// vecmath512_amd64.s)
	VMULPS      Y1, Y1, Y8 // hi
	VMOVAPS     Y8, Y9
	VFMSUB231PS Y1, Y1, Y9 // lo

	VMULPS C_HALF, Y8, Y8
	VXORPS C_SIGN, Y8, Y8  // -hi/2
	EXPNEG(Y8, Y10, Y11, Y12, Y13, Y14)
	VMULPS  C_HALF, Y9, Y9
	VMOVUPS C_ONE, Y10
	VSUBPS  Y9, Y10, Y9    // 1 - lo/2

	// piece index: Y3 = Σ (a >= bound) as 0/-1 lanes, negated
	VMULPS C_INVSQ2, Y1, Y2 // a
	VCMPPS $13, C_BOUND0, Y2, Y3
	VCMPPS $13, C_BOUND1, Y2, Y4
	VPADDD Y4, Y3, Y3
	VCMPPS $13, C_BOUND2, Y2, Y4
	VPADDD Y4, Y3, Y3
	VCMPPS $13, C_BOUND3, Y2, Y4
	VPADDD Y4, Y3, Y3
	VPXOR  Y4, Y4, Y4
	VPSUBD Y3, Y4, Y3

	// t = (a - mid)·scale; t2, t4, t8
	VPERMPS C_MID, Y3, Y4
	VSUBPS  Y4, Y2, Y4
	VPERMPS C_SCALE, Y3, Y5
	VMULPS  Y5, Y4, Y4
	VMULPS  Y4, Y4, Y5
	VMULPS  Y5, Y5, Y6
	VMULPS  Y6, Y6, Y7

	// q_k = c[2k+1]·t + c[2k]; r0 = q1·t2 + q0; r1 = q3·t2 + q2
	VPERMPS C_C1, Y3, Y10
	VMULPS  Y4, Y10, Y10
	VPERMPS C_C0, Y3, Y11
	VADDPS  Y11, Y10, Y10  // q0
	VPERMPS C_C3, Y3, Y11
	VMULPS  Y4, Y11, Y11
	VPERMPS C_C2, Y3, Y12
	VADDPS  Y12, Y11, Y11  // q1
	VMULPS  Y5, Y11, Y11
	VADDPS  Y10, Y11, Y10  // r0
	VPERMPS C_C5, Y3, Y11
	VMULPS  Y4, Y11, Y11
	VPERMPS C_C4, Y3, Y12
	VADDPS  Y12, Y11, Y11  // q2
	VPERMPS C_C7, Y3, Y12
	VMULPS  Y4, Y12, Y12
	VPERMPS C_C6, Y3, Y13
	VADDPS  Y13, Y12, Y12  // q3
	VMULPS  Y5, Y12, Y12
	VADDPS  Y11, Y12, Y11  // r1
	VPERMPS C_C9, Y3, Y12
	VMULPS  Y4, Y12, Y12
	VPERMPS C_C8, Y3, Y13
	VADDPS  Y13, Y12, Y12  // q4

	// g = (r1·t4 + r0) + q4·t8
	VMULPS Y6, Y11, Y11
	VADDPS Y10, Y11, Y11
	VMULPS Y7, Y12, Y12
	VADDPS Y12, Y11, Y5

	VMULPS Y8, Y5, Y5      // g·e**(-hi/2)
	VMULPS Y9, Y5, Y5      // erfc(a)

	VMOVUPS   C_TWO, Y10
	VSUBPS    Y5, Y10, Y10    // 2 - erfc(a)
	VXORPS    Y11, Y11, Y11
	VCMPPS    $13, Y11, Y0, Y11 // x >= 0
	VBLENDVPS Y11, Y10, Y5, Y5
	VMULPS    C_HALF, Y0, Y0
	VMULPS    Y5, Y0, Y0
	VMOVUPS   Y0, (DI)

	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, DX
	JNZ  geluloop
	VZEROUPPER
	RET

// HORNER is one step of Horner's scheme: P = P·Z + c.
#define HORNER(P, Z, c) \
	VMULPS Z, P, P \
	VADDPS c, P, P

// SIGMOIDFRAC sets R = (S < 0 ? E : 1) / (1 + E), the logistic function
// of a value of S's sign from E = e**-|value|, as kernels.SigmoidOne ends
// (Y8 holds 1, Y9 0; D and M are clobbered).
#define SIGMOIDFRAC(E, S, D, M, R) \
	VADDPS    E, Y8, D \
	VCMPPS    $1, Y9, S, M \
	VBLENDVPS M, E, Y8, R \
	VDIVPS    D, R, R

// func sigmoidAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(src) is a positive multiple of 8, len(dst) >= len(src). Per lane,
// as kernels.SigmoidOne: e = ExpNeg(-|x|); (x < 0 ? e : 1) / (1 + e).
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-56
	MOVQ    dst_base+0(FP), DI
	MOVQ    src_base+24(FP), SI
	MOVQ    src_len+32(FP), DX
	MOVQ    c+48(FP), CX
	VMOVUPS C_ONE, Y8
	VXORPS  Y9, Y9, Y9

sigmoidloop:
	VMOVUPS   (SI), Y0
	VANDPS    C_ABS, Y0, Y1
	VXORPS    C_SIGN, Y1, Y1      // -|x|
	EXPNEG(Y1, Y2, Y3, Y4, Y5, Y6) // e
	SIGMOIDFRAC(Y1, Y0, Y2, Y3, Y4)
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, DX
	JNZ       sigmoidloop
	VZEROUPPER
	RET

// func tanhAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(src) is a positive multiple of 8, len(dst) >= len(src). Per lane,
// as kernels.TanhOne: for a = |x|, both a + (a·z)·P(z) (z = a², P by
// Horner's scheme from c8) and (1 - e)/(1 + e) (e = ExpNeg(-(a+a))), the
// first where a < 0.625; then x's sign bit.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-56
	MOVQ    dst_base+0(FP), DI
	MOVQ    src_base+24(FP), SI
	MOVQ    src_len+32(FP), DX
	MOVQ    c+48(FP), CX
	VMOVUPS C_ONE, Y8

tanhloop:
	VMOVUPS (SI), Y0
	VANDPS  C_ABS, Y0, Y1          // a
	VADDPS  Y1, Y1, Y2
	VXORPS  C_SIGN, Y2, Y2         // -(a + a)
	EXPNEG(Y2, Y3, Y4, Y5, Y6, Y7) // e
	VSUBPS  Y2, Y8, Y3             // 1 - e
	VADDPS  Y2, Y8, Y4             // 1 + e
	VDIVPS  Y4, Y3, Y3

	VMULPS  Y1, Y1, Y2 // z
	VMOVUPS C_TC8, Y4
	HORNER(Y4, Y2, C_TC7)
	HORNER(Y4, Y2, C_TC6)
	HORNER(Y4, Y2, C_TC5)
	HORNER(Y4, Y2, C_TC4)
	HORNER(Y4, Y2, C_TC3)
	HORNER(Y4, Y2, C_TC2)
	HORNER(Y4, Y2, C_TC1)
	HORNER(Y4, Y2, C_TC0)
	VMULPS  Y2, Y1, Y5     // a·z
	VMULPS  Y4, Y5, Y5     // (a·z)·P
	VADDPS  Y5, Y1, Y5     // a + (a·z)·P

	VCMPPS    $1, C_TSMALL, Y1, Y6 // a < 0.625 (false for NaN)
	VBLENDVPS Y6, Y5, Y3, Y3
	VANDPS    C_SIGN, Y0, Y0
	VORPS     Y0, Y3, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, DX
	JNZ       tanhloop
	VZEROUPPER
	RET

// GELUT4 computes t = K·(X + A·X³) in float64 for the 4 float64 lanes of
// X (Y14: A, Y15: K), into T; X is kept.
#define GELUT4(X, T) \
	VMULPD X, X, T \
	VMULPD X, T, T \
	VMULPD Y14, T, T \
	VADDPD X, T, T \
	VMULPD Y15, T, T

// func geluTanhAVX2(dst, src []float32, c *[kernels.ActRows][8]float32)
// len(src) is a positive multiple of 8, len(dst) >= len(src). Per lane,
// as kernels.GeluTanhOne: t in float64 (each half of the 8 lanes in a ymm
// of float64), split into float32 hi + lo; e = e**-|t| by EXPNEGLO on
// (-|hi|, ±lo); then x·((hi < 0 ? e : 1)/(1 + e)).
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	MOVQ         c+48(FP), CX
	VMOVUPS      C_ONE, Y8
	VXORPS       Y9, Y9, Y9
	VMOVUPS      C_SIGN, Y13
	VBROADCASTSD C_GELUA, Y14
	VBROADCASTSD C_GELUK, Y15

gelutloop:
	VMOVUPS      (SI), Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y2
	GELUT4(Y1, Y3)                      // t, lanes 0-3
	GELUT4(Y2, Y4)                      // t, lanes 4-7
	VCVTPD2PSY   Y3, X5                 // hi
	VCVTPD2PSY   Y4, X6
	VCVTPS2PD    X5, Y7
	VSUBPD       Y7, Y3, Y3
	VCVTPD2PSY   Y3, X3                 // lo = t - hi
	VCVTPS2PD    X6, Y7
	VSUBPD       Y7, Y4, Y4
	VCVTPD2PSY   Y4, X4
	VINSERTF128  $1, X6, Y5, Y5         // hi, 8 lanes
	VINSERTF128  $1, X4, Y3, Y3         // lo, 8 lanes
	VORPS        Y13, Y5, Y6            // -|hi|
	VANDNPS      Y13, Y5, Y7            // the sign bit where hi's is clear
	VXORPS       Y7, Y3, Y3             // the low part of -|t|
	EXPNEGLO(Y6, Y3, Y1, Y2, Y4, Y7, Y10) // e
	SIGMOIDFRAC(Y6, Y5, Y2, Y4, Y1)
	VMULPS       Y1, Y0, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, DX
	JNZ          gelutloop
	VZEROUPPER
	RET
