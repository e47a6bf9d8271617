//go:build gc && !purego

#include "textflag.h"

// Vector math of the transformer paths (kernels/vecmath.go is the spec):
// every lane runs the reference's float32 operations in its order, a
// fused multiply-add where the reference calls FMA32 (GELU's) and
// separate multiplies and adds everywhere else, so the results are the
// reference's bits (GELU24 below takes another route to the same bits
// for x²). CX points at kernels.VecConsts(): row r is 8 lanes at
// r*32(CX).

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
#define C_GSCALE 672(CX)
#define C_GOFF 704(CX)
#define C_NEGHALF 768(CX)
#define C_G0 800(CX)
#define C_G1 832(CX)
#define C_G2 864(CX)
#define C_G3 896(CX)
#define C_G4 928(CX)
#define C_G5 960(CX)
#define C_G6 992(CX)
#define C_G7 1024(CX)
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

// GELU (kernels.GeluOne) runs on three vectors at a time: the two long
// dependency chains of each, g's Horner scheme and the exponential's
// reduction and polynomial, are interleaved. The reference's FMA32s are
// fused instructions here (VFMADD, VFMSUB, VFNMADD: one rounding), its
// other operations separate ones, but for x² = hi + lo: GELUA computes
// -hi/2 and -lo/2 directly, and r adds -lo/2 where the reference
// subtracts lo·0.5 in an FMA, with the same bits. For vector j,
// registers Y(5j) to Y(5j+4) and the frame's slots j; Y15 is scratch.
// The frame, at R8 (32-byte aligned), holds the per-piece rows rotated
// by GELUROW, then x/2, 2^k and -lo/2 of each vector.
#define G_SCALE 0(R8)
#define G_OFF 32(R8)
#define G_C0 64(R8)
#define G_C1 96(R8)
#define G_C2 128(R8)
#define G_C3 160(R8)
#define G_C4 192(R8)
#define G_C5 224(R8)
#define G_C6 256(R8)
#define G_C7 288(R8)
#define G_HX0 320(R8)
#define G_HX1 352(R8)
#define G_HX2 384(R8)
#define G_K0 416(R8)
#define G_K1 448(R8)
#define G_K2 480(R8)
#define G_LO0 512(R8)
#define G_LO1 544(R8)
#define G_LO2 576(R8)

// GELUROW stores the per-piece row C at F rotated by 2 lanes, F[l] =
// C[(l+2) mod 8]: VPERMPS reads the low 3 bits of an index, and those of
// bits(a + 1) >> 22 are those of piece + 254 (row VecGPiece), so F at
// that index is C at the piece, without the subtraction.
#define GELUROW(C, F) \
	VPERMQ  $0x39, C, Y0 \
	VMOVUPS Y0, F

// GELUA starts GELU on the lanes of X:
//   HX = x/2; X = xa = min(|x|, maxX), on the bits: |x|, maxX and NaN
//   order as integers; h = -xa/2; N = d = xa·h; LO = xa·h - d in one
//   FMA. For xa >= 2^-48, h is exact, xa·h = -xa²/2 rounds as -hi/2
//   (halving commutes with rounding) and its rounding error is
//   representable: d is the reference's d and LO is -lo/2 exactly.
//   Below, both may differ in their last bits, but |r| < 2^-90 and
//   y + 1 rounds to 1 in either case.
#define GELUA(X, N, D, HX, LO) \
	VMULPS      C_HALF, X, D \
	VMOVUPS     D, HX \
	VANDPS      C_ABS, X, X \
	VPMINSD     C_MAXX, X, X \
	VMULPS      C_NEGHALF, X, D \
	VMULPS      D, X, N \
	VFMSUB213PS N, X, D \
	VMOVUPS     D, LO

// GELUA2 goes on: X = a = xa/√2; I = bits(a + 1) >> 22, the piece plus
// 254; T = t = a·scale + off; D = tt = d·log2e + magic (Y15 is
// clobbered).
#define GELUA2(X, N, D, I, T) \
	VMULPS      C_INVSQ2, X, X \
	VADDPS      C_ONE, X, I \
	VPSRLD      $22, I, I \
	VMOVUPS     C_MAGIC, D \
	VFMADD231PS C_LOG2E, N, D \
	VPERMPS     G_SCALE, I, T \
	VPERMPS     G_OFF, I, Y15 \
	VFMADD213PS Y15, X, T

// GELUB: K = 2^k from tt's bits, 0 where d < ExpNegMin (d <= -0, so
// comparing the bits as integers orders it); X = g = c7 (Y15 is
// clobbered).
#define GELUB(X, N, D, I, K) \
	VPSUBD   C_EXPBIAS, D, X \
	VPSLLD   $23, X, X \
	VPCMPGTD C_EXPMIN, N, Y15 \
	VPANDN   X, Y15, X \
	VMOVUPS  X, K \
	VPERMPS  G_C7, I, X

// GELUB2: D = n = tt - magic; N = r = d - n·ln2hi, r - n·ln2lo (each one
// FMA), r + LO; D = p = P0·r + P1.
#define GELUB2(N, D, LO) \
	VSUBPS       C_MAGIC, D, D \
	VFNMADD231PS C_LN2HI, D, N \
	VFNMADD231PS C_LN2LO, D, N \
	VADDPS       LO, N, N \
	VMOVUPS      C_P0, D \
	VFMADD213PS  C_P1, N, D

// GELUG is a step of g's Horner scheme: X = g·t + G[piece] (Y15 is
// clobbered).
#define GELUG(G, X, I, T) \
	VPERMPS     G, I, Y15 \
	VFMADD213PS Y15, T, X

// GELUSTEP is a step of both chains of the three vectors: GELUG with row
// G, and p = p·r + P.
#define GELUSTEP(G, P) \
	GELUG(G, Y0, Y3, Y4) \
	VFMADD213PS P, Y1, Y2 \
	GELUG(G, Y5, Y8, Y9) \
	VFMADD213PS P, Y6, Y7 \
	GELUG(G, Y10, Y13, Y14) \
	VFMADD213PS P, Y11, Y12

// GELUG3 is GELUG with row G on the three vectors: g's Horner steps
// after the exponential's polynomial is done.
#define GELUG3(G) \
	GELUG(G, Y0, Y3, Y4) \
	GELUG(G, Y5, Y8, Y9) \
	GELUG(G, Y10, Y13, Y14)

// GELUC: y = p·r² + r; X = e = g·((y + 1)·2^k) = erfc(a) (Y15 is
// clobbered).
#define GELUC(X, N, D, K) \
	VMULPS      N, N, Y15 \
	VFMADD213PS N, Y15, D \
	VADDPS      C_ONE, D, D \
	VMULPS      K, D, D \
	VMULPS      D, X, X

// GELUC2: D = (x/2)·(x >= 0 ? 2 - e : e), picked by the sign of x/2: -0
// and NaN take the other branch from the reference's x >= 0, which
// changes no bits (-0 either way; x's NaN). Y15 is clobbered.
#define GELUC2(X, D, HX) \
	VMOVUPS   C_TWO, Y15 \
	VSUBPS    X, Y15, Y15 \
	VMOVUPS   HX, D \
	VBLENDVPS D, X, Y15, Y15 \
	VMULPS    Y15, D, D

// GELU24 sets Y2, Y7 and Y12 to GELU of the lanes of Y0, Y5 and Y10.
#define GELU24 \
	GELUA(Y0, Y1, Y2, G_HX0, G_LO0) \
	GELUA(Y5, Y6, Y7, G_HX1, G_LO1) \
	GELUA(Y10, Y11, Y12, G_HX2, G_LO2) \
	GELUA2(Y0, Y1, Y2, Y3, Y4) \
	GELUA2(Y5, Y6, Y7, Y8, Y9) \
	GELUA2(Y10, Y11, Y12, Y13, Y14) \
	GELUB(Y0, Y1, Y2, Y3, G_K0) \
	GELUB(Y5, Y6, Y7, Y8, G_K1) \
	GELUB(Y10, Y11, Y12, Y13, G_K2) \
	GELUB2(Y1, Y2, G_LO0) \
	GELUB2(Y6, Y7, G_LO1) \
	GELUB2(Y11, Y12, G_LO2) \
	GELUSTEP(G_C6, C_P2) \
	GELUSTEP(G_C5, C_P3) \
	GELUSTEP(G_C4, C_P4) \
	GELUSTEP(G_C3, C_P5) \
	GELUG3(G_C2) \
	GELUG3(G_C1) \
	GELUG3(G_C0) \
	GELUC(Y0, Y1, Y2, G_K0) \
	GELUC(Y5, Y6, Y7, G_K1) \
	GELUC(Y10, Y11, Y12, G_K2) \
	GELUC2(Y0, Y2, G_HX0) \
	GELUC2(Y5, Y7, G_HX1) \
	GELUC2(Y10, Y12, G_HX2)

// func geluAVX2(dst, src, bias []float32, c *[37][8]float32)
// len(src) is a positive multiple of 8, len(dst) >= len(src); bias is
// empty or at least as long as src. x = src[j] (+ bias[j]); GELU24 on
// 24 values a step, the last step on 8 or 16 (the first vector standing
// in for the missing ones).
TEXT ·geluAVX2(SB), 0, $640-80
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	MOVQ bias_base+48(FP), BX
	MOVQ bias_len+56(FP), AX
	MOVQ c+72(FP), CX
	LEAQ 31(SP), R8
	ANDQ $~31, R8
	GELUROW(C_GSCALE, G_SCALE)
	GELUROW(C_GOFF, G_OFF)
	GELUROW(C_G0, G_C0)
	GELUROW(C_G1, G_C1)
	GELUROW(C_G2, G_C2)
	GELUROW(C_G3, G_C3)
	GELUROW(C_G4, G_C4)
	GELUROW(C_G5, G_C5)
	GELUROW(C_G6, G_C6)
	GELUROW(C_G7, G_C7)

geluloop:
	VMOVUPS (SI), Y0
	TESTQ   AX, AX
	JZ      gelux1
	VADDPS  (BX), Y0, Y0

gelux1:
	VMOVAPS Y0, Y5
	VMOVAPS Y0, Y10
	CMPQ    DX, $16
	JLT     gelurun
	VMOVUPS 32(SI), Y5
	TESTQ   AX, AX
	JZ      gelux2
	VADDPS  32(BX), Y5, Y5

gelux2:
	CMPQ    DX, $24
	JLT     gelurun
	VMOVUPS 64(SI), Y10
	TESTQ   AX, AX
	JZ      gelurun
	VADDPS  64(BX), Y10, Y10

gelurun:
	GELU24
	VMOVUPS Y2, (DI)
	CMPQ    DX, $16
	JLT     geludone
	VMOVUPS Y7, 32(DI)
	CMPQ    DX, $24
	JLT     geludone
	VMOVUPS Y12, 64(DI)
	ADDQ    $96, SI
	ADDQ    $96, BX
	ADDQ    $96, DI
	SUBQ    $24, DX
	JNZ     geluloop

geludone:
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
