//go:build gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Vector math of the transformer paths (kernels/vecmath.go is the spec):
// every lane runs the reference's float32 operations in its order, with
// separate multiplies and adds (FMUL then FADD, never FMLA), so the
// results are the reference's bits. The constants come from neonConsts
// (vecmath_arm64.go), one row of 4 lanes per 16 bytes:
//
//	V16..V27  rows 0..11: log2e, magic, ln2hi, ln2lo, p0..p5, expMin,
//	          expBias (ExpNeg's), loaded once by LOADEXP
//	V28..V31  rows 12..15: maxX, split mask, 1/√2, 0.5 (GELU's)
//	rows 16..19 the GELU pieces' bounds, 20..21 the TBL index constants,
//	22.. the pieces' tables (8 lanes, two rows each): mid, scale, c0..c9

// LOADEXP loads rows 0..11 of the constants at R2 into V16..V27 (R9
// scratch).
#define LOADEXP \
	MOVD R2, R9                                      \
	VLD1.P 64(R9), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R9), [V20.S4, V21.S4, V22.S4, V23.S4] \
	VLD1.P 64(R9), [V24.S4, V25.S4, V26.S4, V27.S4]

// EXPNEG sets D = kernels.ExpNeg(D) lane by lane; T1..T5 are clobbered.
//
//	t = d·log2e + magic; n = t - magic; 2^k from t's bits
//	r = (d - n·ln2hi) - n·ln2lo; r2 = r·r
//	p = ((p0·r + p1)·r2 + (p2·r + p3))·r2 + (p4·r + p5)
//	e = ((p·r2 + r) + 1)·2^k; lanes with d < ExpNegMin become 0 (NaN
//	stays NaN)
#define EXPNEG(D, T1, T2, T3, T4, T5) \
	EXPREDUCE(D, T1, T2, T3) \
	EXPPOLY(D, T1, T2, T3, T4, T5)

// EXPNEGLO sets D = e**(D+LO) as kernels' expNegLo: EXPNEG with LO added
// to the reduced argument r. LO is kept; T1..T5 are clobbered.
#define EXPNEGLO(D, LO, T1, T2, T3, T4, T5) \
	EXPREDUCE(D, T1, T2, T3)       \
	V_FADD(T3, T3, LO)             \
	EXPPOLY(D, T1, T2, T3, T4, T5)

// EXPREDUCE is EXPNEG's first part: T1 = 2^k's bits, T3 = r.
#define EXPREDUCE(D, T1, T2, T3) \
	V_FMUL(T1, D, 16)  \
	V_FADD(T1, T1, 17) \
	V_FSUB(T2, T1, 17) \
	V_SUB(T1, T1, 27)  \
	V_SHL(T1, T1, 23)  \
	V_FMUL(T3, T2, 18) \
	V_FSUB(T3, D, T3)  \
	V_FMUL(T2, T2, 19) \
	V_FSUB(T3, T3, T2)

// EXPPOLY is EXPNEG's second part: D = ((p·r2 + r) + 1)·2^k from T1 and
// T3 as EXPREDUCE leaves them, 0 where D < ExpNegMin.
#define EXPPOLY(D, T1, T2, T3, T4, T5) \
	V_FMUL(T2, T3, T3) \
	V_FMUL(T4, 20, T3) \
	V_FADD(T4, T4, 21) \
	V_FMUL(T5, 22, T3) \
	V_FADD(T5, T5, 23) \
	V_FMUL(T4, T4, T2) \
	V_FADD(T4, T4, T5) \
	V_FMUL(T4, T4, T2) \
	V_FMUL(T5, 24, T3) \
	V_FADD(T5, T5, 25) \
	V_FADD(T4, T4, T5) \
	V_FMUL(T4, T4, T2) \
	V_FADD(T4, T4, T3) \
	V_FMOV1(T5)        \
	V_FADD(T4, T4, T5) \
	V_FMUL(T4, T4, T1) \
	V_FCMGT(D, 26, D)  \
	V_BIC(D, T4, D)

// func maxScaledNEON(x []float32, scale float32, m *[8]float32)
//
// len(x) is a positive multiple of 8. Lane l of m gets the largest
// float32(scale·x[j]) over the j = l mod 8, NaN ignored (-Inf for none):
// y > m ? y : m, by FCMGT and BIT.
TEXT ·maxScaledNEON(SB), NOSPLIT, $0-40
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R3
	FMOVS scale+24(FP), F7
	VDUP  V7.S[0], V7.S4
	MOVD  m+32(FP), R1
	VLD1  (R1), [V4.S4, V5.S4] // -Inf

maxloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	V_FMUL(0, 0, 7)
	V_FMUL(1, 1, 7)
	V_FCMGT(2, 0, 4)
	V_BIT(4, 0, 2)
	V_FCMGT(3, 1, 5)
	V_BIT(5, 1, 3)
	SUB    $8, R3
	CBNZ   R3, maxloop
	VST1   [V4.S4, V5.S4], (R1)
	RET

// EXPBLOCK runs ExpNeg(scale·x - m) on the 8 values at R0, stores them
// and adds them to the accumulators LO (lanes 0-3) and HI (lanes 4-7).
// V6 holds scale, V7 m.
#define EXPBLOCK(LO, HI) \
	VLD1 (R0), [V0.S4, V1.S4]            \
	V_FMUL(0, 0, 6)                      \
	V_FSUB(0, 0, 7)                      \
	V_FMUL(1, 1, 6)                      \
	V_FSUB(1, 1, 7)                      \
	EXPNEG(0, 2, 3, 4, 5, 8)             \
	EXPNEG(1, 9, 10, 11, 14, 15)         \
	VST1.P [V0.S4, V1.S4], 32(R0)        \
	V_FADD(LO, LO, 0)                    \
	V_FADD(HI, HI, 1)

// func expSumNEON(x []float32, scale, m float32, c *[neonRows][4]float32, s *[8]float32)
//
// len(x) is a positive multiple of 8. x[j] = ExpNeg(scale·x[j] - m);
// blocks of 8 alternate between two 8-lane accumulators (V12/V13 and
// V28/V29), whose lane-by-lane sum goes to s for kernels.FoldLanes.
TEXT ·expSumNEON(SB), NOSPLIT, $0-48
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R3
	FMOVS scale+24(FP), F6
	VDUP  V6.S[0], V6.S4
	FMOVS m+28(FP), F7
	VDUP  V7.S[0], V7.S4
	MOVD  c+32(FP), R2
	MOVD  s+40(FP), R1
	LOADEXP
	VEOR  V12.B16, V12.B16, V12.B16
	VEOR  V13.B16, V13.B16, V13.B16
	VEOR  V28.B16, V28.B16, V28.B16
	VEOR  V29.B16, V29.B16, V29.B16
	CMP   $16, R3
	BLT   exptail

exploop:
	EXPBLOCK(12, 13)
	EXPBLOCK(28, 29)
	SUB $16, R3
	CMP $16, R3
	BGE exploop

exptail:
	CBZ R3, expdone
	EXPBLOCK(12, 13)

expdone:
	V_FADD(12, 12, 28)
	V_FADD(13, 13, 29)
	VST1 [V12.S4, V13.S4], (R1)
	RET

// func scaleNEON(x []float32, s float32)
//
// len(x) is a positive multiple of 8: x[j] *= s.
TEXT ·scaleNEON(SB), NOSPLIT, $0-28
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R3
	FMOVS s+24(FP), F7
	VDUP  V7.S[0], V7.S4
	MOVD  R0, R1

scaleloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	V_FMUL(0, 0, 7)
	V_FMUL(1, 1, 7)
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, scaleloop
	RET

// func addBiasNEON(y, bias, res []float32)
//
// len(y) is a positive multiple of 8; len(bias) >= len(y); res is empty
// or as long as y: y[j] = (y[j] + bias[j]) + res[j].
TEXT ·addBiasNEON(SB), NOSPLIT, $0-72
	MOVD y_base+0(FP), R0
	MOVD y_len+8(FP), R3
	MOVD bias_base+24(FP), R4
	MOVD res_base+48(FP), R5
	MOVD res_len+56(FP), R6
	MOVD R0, R1
	CBNZ R6, addres

addloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R4), [V2.S4, V3.S4]
	V_FADD(0, 0, 2)
	V_FADD(1, 1, 3)
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, addloop
	RET

addres:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R4), [V2.S4, V3.S4]
	VLD1.P 32(R5), [V4.S4, V5.S4]
	V_FADD(0, 0, 2)
	V_FADD(1, 1, 3)
	V_FADD(0, 0, 4)
	V_FADD(1, 1, 5)
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUB    $8, R3
	CBNZ   R3, addres
	RET

// PIECE sets D to the next row of the pieces' tables (at R10, advanced)
// looked up by the byte indexes in V8; V12/V13 are scratch.
#define PIECE(D) \
	VLD1.P 32(R10), [V12.S4, V13.S4] \
	V_TBL2(D, 12, 8)

// func geluNEON(dst, src, bias []float32, c *[neonRows][4]float32)
//
// len(src) is a positive multiple of 4, len(dst) >= len(src); bias is
// empty or at least as long as src. Per lane, as kernels.GeluOne:
//
//	xa = |x| < maxX ? |x| : maxX (NaN too); x² = hi + lo exactly (xa
//	split in 12-bit halves)
//	a = xa/√2; piece i = #bounds <= a; t = (a - mid[i])·scale[i]
//	g = Σ c[i][k]·t^k by Estrin's scheme
//	e = (g·ExpNeg(-hi/2))·(1 - lo/2) = erfc(a)
//	gelu = (x/2)·(x >= 0 ? 2 - e : e)
//
// The piece's constants come from 8-lane tables by TBL, with byte
// indexes 4i..4i+3 in each lane.
TEXT ·geluNEON(SB), NOSPLIT, $0-80
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R3
	MOVD bias_base+48(FP), R4
	MOVD bias_len+56(FP), R5
	MOVD c+72(FP), R2
	LOADEXP
	VLD1 (R9), [V28.S4, V29.S4, V30.S4, V31.S4] // rows 12..15
	ADD  $256, R2, R11                          // bounds, then TBL constants
	ADD  $352, R2, R12                          // the pieces' tables

geluloop:
	VLD1.P 16(R1), [V0.S4]
	CBZ    R5, gelunobias
	VLD1.P 16(R4), [V1.S4]
	V_FADD(0, 0, 1)

gelunobias:
	V_FABS(1, 0)
	V_FCMGT(2, 28, 1)
	V_BIF(1, 28, 2)    // xa

	// x² = hi + lo: xh = the high 12 bits of xa, xl = xa - xh
	V_AND(2, 1, 29)    // xh
	V_FSUB(3, 1, 2)    // xl
	V_FMUL(4, 1, 1)    // hi
	V_FMUL(5, 2, 2)
	V_FSUB(5, 5, 4)    // xh·xh - hi
	V_FMUL(6, 2, 3)
	V_FADD(6, 6, 6)    // 2·(xh·xl)
	V_FADD(5, 5, 6)
	V_FMUL(3, 3, 3)
	V_FADD(5, 5, 3)    // lo
	V_FMUL(4, 4, 31)
	V_FNEG(4, 4)       // -hi/2
	EXPNEG(4, 2, 3, 6, 7, 8)
	V_FMUL(5, 5, 31)
	V_FMOV1(6)
	V_FSUB(5, 6, 5)    // 1 - lo/2

	// piece index i = Σ (a >= bound), then byte indexes 4i + (0,1,2,3)
	V_FMUL(2, 1, 30)   // a
	VLD1 (R11), [V8.S4, V9.S4, V10.S4, V11.S4]
	V_FCMGE(8, 2, 8)
	V_FCMGE(9, 2, 9)
	V_FCMGE(10, 2, 10)
	V_FCMGE(11, 2, 11)
	V_ADD(8, 8, 9)
	V_ADD(10, 10, 11)
	V_ADD(8, 8, 10)
	V_NEG(8, 8)        // i
	ADD  $64, R11, R9
	VLD1 (R9), [V9.S4, V10.S4]
	V_MUL(8, 8, 9)
	V_ADD(8, 8, 10)    // TBL indexes
	MOVD R12, R10

	// t = (a - mid)·scale; t2, t4, t8
	PIECE(9)
	V_FSUB(2, 2, 9)
	PIECE(9)
	V_FMUL(2, 2, 9)    // t
	V_FMUL(3, 2, 2)    // t2
	V_FMUL(6, 3, 3)    // t4
	V_FMUL(7, 6, 6)    // t8

	// q_k = c[2k+1]·t + c[2k]; r0 = q1·t2 + q0; r1 = q3·t2 + q2
	PIECE(9)
	PIECE(10)
	V_FMUL(10, 10, 2)
	V_FADD(10, 10, 9)  // q0
	PIECE(9)
	PIECE(11)
	V_FMUL(11, 11, 2)
	V_FADD(11, 11, 9)  // q1
	V_FMUL(11, 11, 3)
	V_FADD(10, 11, 10) // r0
	PIECE(9)
	PIECE(11)
	V_FMUL(11, 11, 2)
	V_FADD(11, 11, 9)  // q2
	PIECE(9)
	PIECE(14)
	V_FMUL(14, 14, 2)
	V_FADD(14, 14, 9)  // q3
	V_FMUL(14, 14, 3)
	V_FADD(11, 14, 11) // r1
	PIECE(9)
	PIECE(14)
	V_FMUL(14, 14, 2)
	V_FADD(14, 14, 9)  // q4

	// g = (r1·t4 + r0) + q4·t8
	V_FMUL(11, 11, 6)
	V_FADD(11, 11, 10)
	V_FMUL(14, 14, 7)
	V_FADD(11, 11, 14)

	V_FMUL(11, 11, 4)  // g·e**(-hi/2)
	V_FMUL(11, 11, 5)  // erfc(a)

	V_FMOV2(12)
	V_FSUB(12, 12, 11) // 2 - erfc(a)
	V_FCMGEZ(13, 0)    // x >= 0
	V_BIT(11, 12, 13)
	V_FMUL(0, 0, 31)   // x/2
	V_FMUL(0, 0, 11)
	VST1.P [V0.S4], 16(R0)

	SUB  $4, R3
	CBNZ R3, geluloop
	RET

// HORNER is one step of Horner's scheme on registers P, Z and C:
// P = P·Z + C.
#define HORNER(P, Z, C) \
	V_FMUL(P, P, Z) \
	V_FADD(P, P, C)

// SIGMOIDFRAC sets V4 = (S < 0 ? E : 1) / (1 + E), the logistic
// function of a value of S's sign from E = e**-|value|, as
// kernels.SigmoidOne ends (0 > S is false for -0 and NaN); ONE holds 1,
// ZERO 0; V2 and V3 are clobbered.
#define SIGMOIDFRAC(E, S, ONE, ZERO) \
	V_FADD(2, ONE, E) \
	V_FCMGT(3, ZERO, S) \
	V_AND(4, ONE, ONE) \
	V_BIT(4, E, 3) \
	V_FDIV(4, 4, 2)

// func sigmoidNEON(dst, src []float32, c *[actRows][4]float32)
//
// len(src) is a positive multiple of 4, len(dst) >= len(src). Per lane,
// as kernels.SigmoidOne: e = ExpNeg(-|x|); (x < 0 ? e : 1) / (1 + e).
TEXT ·sigmoidNEON(SB), NOSPLIT, $0-56
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R3
	MOVD c+48(FP), R2
	LOADEXP
	V_FMOV1(29)
	VEOR V30.B16, V30.B16, V30.B16

sigmoidloop:
	VLD1.P 16(R1), [V0.S4]
	V_FABS(1, 0)
	V_FNEG(1, 1)                  // -|x|
	EXPNEG(1, 3, 4, 5, 6, 7)      // e
	SIGMOIDFRAC(1, 0, 29, 30)
	VST1.P [V4.S4], 16(R0)
	SUB    $4, R3
	CBNZ   R3, sigmoidloop
	RET

// func tanhNEON(dst, src []float32, c *[actRows][4]float32)
//
// len(src) is a positive multiple of 4, len(dst) >= len(src). Per lane,
// as kernels.TanhOne: for a = |x|, both a + (a·z)·P(z) (z = a², P by
// Horner's scheme from c8) and (1 - e)/(1 + e) (e = ExpNeg(-(a+a))), the
// first where a < 0.625; then x's sign bit (x &^ a). V8..V15 hold
// c0..c7, V31 c8, V28 0.625.
TEXT ·tanhNEON(SB), NOSPLIT, $0-56
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R3
	MOVD c+48(FP), R2
	LOADEXP
	VLD1.P 16(R9), [V28.S4]                      // row 12
	VLD1.P 64(R9), [V8.S4, V9.S4, V10.S4, V11.S4] // rows 13..16
	VLD1.P 64(R9), [V12.S4, V13.S4, V14.S4, V15.S4]
	VLD1   (R9), [V31.S4]
	V_FMOV1(29)

tanhloop:
	VLD1.P 16(R1), [V0.S4]
	V_FABS(1, 0)                  // a
	V_FADD(2, 1, 1)
	V_FNEG(2, 2)                  // -(a + a)
	EXPNEG(2, 3, 4, 5, 6, 7)      // e
	V_FSUB(3, 29, 2)              // 1 - e
	V_FADD(4, 29, 2)              // 1 + e
	V_FDIV(3, 3, 4)

	V_FMUL(2, 1, 1)               // z
	V_FMUL(4, 31, 2)
	V_FADD(4, 4, 15)
	HORNER(4, 2, 14)
	HORNER(4, 2, 13)
	HORNER(4, 2, 12)
	HORNER(4, 2, 11)
	HORNER(4, 2, 10)
	HORNER(4, 2, 9)
	HORNER(4, 2, 8)
	V_FMUL(5, 1, 2)               // a·z
	V_FMUL(5, 5, 4)               // (a·z)·P
	V_FADD(5, 1, 5)               // a + (a·z)·P

	V_FCMGT(6, 28, 1)             // 0.625 > a (false for NaN)
	V_BIT(3, 5, 6)
	V_BIC(7, 0, 1)                // x's sign bit
	VORR   V7.B16, V3.B16, V3.B16
	VST1.P [V3.S4], 16(R0)
	SUB    $4, R3
	CBNZ   R3, tanhloop
	RET

// Float64 operations on two double-precision lanes (.2D) and the
// conversions between them and float32 lanes, as WORD encodings with
// neon_arm64.h's operand order.
#define D_FADD(d, n, m) WORD $(0x4e60d400|((m)<<16)|((n)<<5)|(d)) // FADD Vd.2D, Vn.2D, Vm.2D: n + m
#define D_FSUB(d, n, m) WORD $(0x4ee0d400|((m)<<16)|((n)<<5)|(d)) // FSUB: n - m
#define D_FMUL(d, n, m) WORD $(0x6e60dc00|((m)<<16)|((n)<<5)|(d)) // FMUL: n·m, rounded (never fused)
#define V_FCVTL(d, n) WORD $(0x0e617800|((n)<<5)|(d))             // FCVTL Vd.2D, Vn.2S: float32 lanes 0-1, widened
#define V_FCVTL2(d, n) WORD $(0x4e617800|((n)<<5)|(d))            // FCVTL2 Vd.2D, Vn.4S: lanes 2-3, widened
#define V_FCVTN(d, n) WORD $(0x0e616800|((n)<<5)|(d))             // FCVTN Vd.2S, Vn.2D: rounded to lanes 0-1, 2-3 cleared
#define V_FCVTN2(d, n) WORD $(0x4e616800|((n)<<5)|(d))            // FCVTN2 Vd.4S, Vn.2D: rounded to lanes 2-3, 0-1 kept

// GELUT sets T = K·(V + A·((V·V)·V)) on two float64 lanes; V28 holds A,
// V29 K.
#define GELUT(V, T) \
	D_FMUL(T, V, V)  \
	D_FMUL(T, T, V)  \
	D_FMUL(T, 28, T) \
	D_FADD(T, V, T)  \
	D_FMUL(T, 29, T)

// func geluTanhNEON(dst, src []float32, c *[actRows][4]float32)
//
// len(src) is a positive multiple of 4, len(dst) >= len(src). Per lane,
// as kernels.GeluTanhOne: t in float64 (lanes 0-1 and 2-3 in a register
// each), split into float32 hi + lo (lo = t - hi, rounded); e = e**-|t|
// by EXPNEGLO on (-|hi|, lo with its sign flipped where hi's is clear);
// then x·((hi < 0 ? e : 1)/(1 + e)). V28/V29 hold A and K (rows 22, 23:
// a float64 in each half), V30 1, V31 the sign bit, V14 0.
TEXT ·geluTanhNEON(SB), NOSPLIT, $0-56
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R3
	MOVD c+48(FP), R2
	LOADEXP
	ADD  $352, R2, R9
	VLD1 (R9), [V28.S4, V29.S4] // rows 22, 23
	V_FMOV1(30)
	VEOR V14.B16, V14.B16, V14.B16
	V_FNEG(31, 14)

gelutloop:
	VLD1.P 16(R1), [V0.S4]
	V_FCVTL(1, 0)
	V_FCVTL2(2, 0)
	GELUT(1, 3)                    // t, lanes 0-1
	GELUT(2, 4)                    // t, lanes 2-3
	V_FCVTN(5, 3)
	V_FCVTN2(5, 4)                 // hi
	V_FCVTL(1, 5)
	D_FSUB(3, 3, 1)
	V_FCVTL2(2, 5)
	D_FSUB(4, 4, 2)
	V_FCVTN(6, 3)
	V_FCVTN2(6, 4)                 // lo = t - hi
	VORR   V31.B16, V5.B16, V1.B16 // -|hi|
	V_BIC(2, 31, 5)                // the sign bit where hi's is clear
	VEOR   V2.B16, V6.B16, V6.B16  // the low part of -|t|
	EXPNEGLO(1, 6, 2, 3, 4, 7, 8)  // e
	SIGMOIDFRAC(1, 5, 30, 14)
	V_FMUL(4, 0, 4)
	VST1.P [V4.S4], 16(R0)
	SUB    $4, R3
	CBNZ   R3, gelutloop
	RET
