//go:build gc && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Vector math of the transformer paths (kernels/vecmath.go is the spec):
// every lane runs the reference's float32 operations in its order, so the
// results are the reference's bits. A product the reference rounds is an
// FMUL and a sum an FADD, never fused; where the reference calls
// kernels.FMA32 (GELU's polynomials and exponential) the kernel runs one
// fused FMLA or FMLS, which rounds once as FMA32 does. The constants
// come from neonConsts (vecmath_arm64.go), one row of 4 lanes per 16
// bytes:
//
//	rows 0..11   log2e, magic, ln2hi, ln2lo, p0..p5, expMin, expBias
//	             (ExpNeg's), loaded into V16..V27 by LOADEXP
//	rows 12..55  geluNEON's: see ngMul .. ngPieces

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

// Fused multiply-adds, FMIN and USHR, and the by-element forms that take
// their multiplier from lane i of register m, as WORD encodings with
// neon_arm64.h's operand order (.4S lanes).
#define V_FMLA(d, n, m) WORD $(0x4e20cc00|((m)<<16)|((n)<<5)|(d))  // FMLA: d + n·m, rounded once
#define V_FMLS(d, n, m) WORD $(0x4ea0cc00|((m)<<16)|((n)<<5)|(d))  // FMLS: d - n·m, rounded once
#define V_FMIN(d, n, m) WORD $(0x4ea0f400|((m)<<16)|((n)<<5)|(d))  // FMIN: the smaller (NaN if either is)
#define V_USHR(d, n, s) WORD $(0x6f000400|((64-(s))<<16)|((n)<<5)|(d)) // USHR Vd.4S, Vn.4S, #s
#define ELEM(m, i) (((m)<<16)|(((i)&1)<<21)|(((i)>>1)<<11))
#define E_FMUL(d, n, m, i) WORD $(0x4f809000|ELEM(m, i)|((n)<<5)|(d)) // FMUL Vd.4S, Vn.4S, Vm.S[i]
#define E_FMLA(d, n, m, i) WORD $(0x4f801000|ELEM(m, i)|((n)<<5)|(d)) // FMLA by element: d + n·m[i]
#define E_FMLS(d, n, m, i) WORD $(0x4f805000|ELEM(m, i)|((n)<<5)|(d)) // FMLS by element: d - n·m[i]
#define E_MLA(d, n, m, i) WORD $(0x6f800000|ELEM(m, i)|((n)<<5)|(d))  // MLA by element: integer d + n·m[i]

// geluNEON's registers: V0/V1 hold x for lanes 0-3 and 4-7 of a block
// of 8, and every step below runs on both (the first register of each
// pair for lanes 0-3); V24..V31 hold rows 12..19 of the constants:
//
//	V24  1/√2, -0.5, log2e, 0.5 (by lane)  V28  1
//	V25  ln2hi, ln2lo, P0                  V29  2
//	V26  0x04040404, 1<<23 (integers)      V30  ExpNegMin
//	V27  maxX                              V31  magic
//
// R6..R14 point at the four blocks of accumulators and the five of the
// pieces' rows (rows 20, 24, .. 52). FMLA, FMLS and MLA overwrite their
// accumulator, so the constant ones (magic, 2^k's base, P1..P5, the TBL
// indexes' base) are loaded afresh for every block, four registers a
// load: that takes no vector instruction, where copying a register would.

// GELUPIECE sets V2/V3 = xa = min(|x|, maxX), V4/V5 = a = xa/√2 and
// V8/V9 = TBL's byte indexes 4i..4i+3 of piece i = bits(a + 1)>>22 -
// 254, as base + (bits(a + 1)>>22)·0x04040404; V10/V11 = magic. FMIN
// leaves a NaN where the reference takes maxX: that lane's result is NaN
// either way, 0.5·x being NaN.
#define GELUPIECE \
	V_FABS(2, 0)                                 \
	V_FABS(3, 1)                                 \
	V_FMIN(2, 2, 27)                             \
	V_FMIN(3, 3, 27)                             \
	E_FMUL(4, 2, 24, 0)                          \
	E_FMUL(5, 3, 24, 0)                          \
	V_FADD(6, 4, 28)                             \
	V_FADD(7, 5, 28)                             \
	V_USHR(6, 6, 22)                             \
	V_USHR(7, 7, 22)                             \
	VLD1 (R6), [V8.S4, V9.S4, V10.S4, V11.S4]    \
	E_MLA(8, 6, 26, 0)                           \
	E_MLA(9, 7, 26, 0)

// GELUEXP sets V12/V13 = e**(-x²/2) as kernels' geluExp: hi = xa·xa,
// V6/V7 = hi - xa·xa (fused: -lo, exactly), d = hi·-0.5; tt = d·log2e
// + magic, 2^k's bits = base + bits(tt)·(1<<23) (integers), n = tt -
// magic; r = d - n·ln2hi, r - n·ln2lo, r + (-lo)·0.5 (the reference's
// r + lo·-0.5 but for a zero's sign, which the + 1 below drops);
// p = P0·r + P1, p·r + P2 .. P5; ((p·(r·r) + r) + 1)·2^k, or 0 where
// d < ExpNegMin. Every multiply-add here is fused.
#define GELUEXP \
	V_FMUL(6, 2, 2)                              \
	V_FMUL(7, 3, 3)                              \
	E_FMUL(12, 6, 24, 1)                         \
	E_FMUL(13, 7, 24, 1)                         \
	V_FMLS(6, 2, 2)                              \
	V_FMLS(7, 3, 3)                              \
	V_FCMGT(2, 30, 12)                           \
	V_FCMGT(3, 30, 13)                           \
	E_FMLA(10, 12, 24, 2)                        \
	E_FMLA(11, 13, 24, 2)                        \
	VLD1 (R7), [V14.S4, V15.S4, V16.S4, V17.S4]  \
	E_MLA(14, 10, 26, 1)                         \
	E_MLA(15, 11, 26, 1)                         \
	V_FSUB(10, 10, 31)                           \
	V_FSUB(11, 11, 31)                           \
	E_FMLS(12, 10, 25, 0)                        \
	E_FMLS(13, 11, 25, 0)                        \
	E_FMLS(12, 10, 25, 1)                        \
	E_FMLS(13, 11, 25, 1)                        \
	E_FMLA(12, 6, 24, 3)                         \
	E_FMLA(13, 7, 24, 3)                         \
	E_FMLA(16, 12, 25, 2)                        \
	E_FMLA(17, 13, 25, 2)                        \
	VLD1 (R8), [V18.S4, V19.S4, V20.S4, V21.S4]  \
	V_FMLA(18, 16, 12)                           \
	V_FMLA(19, 17, 13)                           \
	V_FMLA(20, 18, 12)                           \
	V_FMLA(21, 19, 13)                           \
	VLD1 (R9), [V16.S4, V17.S4, V18.S4, V19.S4]  \
	V_FMLA(16, 20, 12)                           \
	V_FMLA(17, 21, 13)                           \
	V_FMLA(18, 16, 12)                           \
	V_FMLA(19, 17, 13)                           \
	V_FMUL(6, 12, 12)                            \
	V_FMUL(7, 13, 13)                            \
	V_FMLA(12, 18, 6)                            \
	V_FMLA(13, 19, 7)                            \
	V_FADD(12, 12, 28)                           \
	V_FADD(13, 13, 28)                           \
	V_FMUL(12, 12, 14)                           \
	V_FMUL(13, 13, 15)                           \
	V_BIC(12, 12, 2)                             \
	V_BIC(13, 13, 3)

// GELUSTEP is a step of Horner's scheme whose coefficient is looked up in
// the table T, T+1: V6/V7 = c + V4/V5·t.
#define GELUSTEP(T) \
	V_TBL2(6, T, 8)                              \
	V_TBL2(7, T, 9)                              \
	V_FMLA(6, 4, 2)                              \
	V_FMLA(7, 5, 3)

// GELUSTEP2 is two steps of Horner's scheme, on the coefficients in the
// tables T, T+1 and T+2, T+3: V6/V7 = (c + V6/V7·t)·t + c'.
#define GELUSTEP2(T) \
	V_TBL2(4, T, 8)                              \
	V_TBL2(5, T, 9)                              \
	V_FMLA(4, 6, 2)                              \
	V_FMLA(5, 7, 3)                              \
	GELUSTEP(T+2)

// GELUPOLY sets V6/V7 = g: t = a·scale + off (V2/V3), then
// g = c7·t + c6, .. g·t + c0, each fused, the pieces' values looked up
// by TBL in the rows R10..R14 point at.
#define GELUPOLY \
	VLD1 (R10), [V16.S4, V17.S4, V18.S4, V19.S4] \
	V_TBL2(2, 16, 8)                             \
	V_TBL2(3, 16, 9)                             \
	V_TBL2(6, 18, 8)                             \
	V_TBL2(7, 18, 9)                             \
	V_FMLA(2, 4, 6)                              \
	V_FMLA(3, 5, 7)                              \
	VLD1 (R11), [V20.S4, V21.S4, V22.S4, V23.S4] \
	V_TBL2(4, 20, 8)                             \
	V_TBL2(5, 20, 9)                             \
	GELUSTEP(22)                                 \
	VLD1 (R12), [V16.S4, V17.S4, V18.S4, V19.S4] \
	GELUSTEP2(16)                                \
	VLD1 (R13), [V20.S4, V21.S4, V22.S4, V23.S4] \
	GELUSTEP2(20)                                \
	VLD1 (R14), [V16.S4, V17.S4, V18.S4, V19.S4] \
	GELUSTEP2(16)

// GELUOUT sets V0/V1 = (x·0.5)·(x >= 0 ? 2 - e : e), e = g·e**(-x²/2).
#define GELUOUT \
	V_FMUL(12, 6, 12)                            \
	V_FMUL(13, 7, 13)                            \
	V_FSUB(2, 29, 12)                            \
	V_FSUB(3, 29, 13)                            \
	V_FCMGEZ(4, 0)                               \
	V_FCMGEZ(5, 1)                               \
	V_BIT(12, 2, 4)                              \
	V_BIT(13, 3, 5)                              \
	E_FMUL(0, 0, 24, 3)                          \
	E_FMUL(1, 1, 24, 3)                          \
	V_FMUL(0, 0, 12)                             \
	V_FMUL(1, 1, 13)

// func geluNEON(dst, src, bias []float32, c *[neonRows][4]float32)
//
// len(src) is a positive multiple of 4, len(dst) >= len(src); bias is
// empty or at least as long as src. Per lane, as kernels.GeluOne, 8
// values a step and the last 4 alone:
//
//	xa = min(|x|, maxX); hi = xa·xa, lo = xa·xa - hi (fused, exact)
//	a = xa/√2; piece i from the bits of a + 1; t = a·scale[i] + off[i]
//	g = c[i][7]·t + c[i][6], .. g·t + c[i][0] (Horner's scheme, fused)
//	e = g·geluExp(-hi/2, lo) = erfc(a)
//	gelu = (x·0.5)·(x >= 0 ? 2 - e : e)
//
// The piece's values come from 8-lane tables by TBL, with byte indexes
// 4i..4i+3 in each lane.
TEXT ·geluNEON(SB), NOSPLIT, $0-80
	MOVD   dst_base+0(FP), R0
	MOVD   src_base+24(FP), R1
	MOVD   src_len+32(FP), R3
	MOVD   bias_base+48(FP), R4
	MOVD   bias_len+56(FP), R5
	MOVD   c+72(FP), R2
	ADD    $192, R2, R6                                // row 12
	VLD1.P 64(R6), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1.P 64(R6), [V28.S4, V29.S4, V30.S4, V31.S4] // R6: row 20
	ADD    $64, R6, R7
	ADD    $128, R6, R8
	ADD    $192, R6, R9
	ADD    $256, R6, R10                               // the pieces' rows
	ADD    $320, R6, R11
	ADD    $384, R6, R12
	ADD    $448, R6, R13
	ADD    $512, R6, R14
	SUBS   $8, R3, R3
	BLT    gelutail

geluloop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	CBZ    R5, gelunobias
	VLD1.P 32(R4), [V2.S4, V3.S4]
	V_FADD(0, 0, 2)
	V_FADD(1, 1, 3)

gelunobias:
	GELUPIECE
	GELUEXP
	GELUPOLY
	GELUOUT
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS   $8, R3, R3
	BGE    geluloop

gelutail: // R3 is the count left less 8: -4 or -8
	TBZ  $2, R3, geludone
	VLD1 (R1), [V0.S4]
	CBZ  R5, geluonlyx
	VLD1 (R4), [V2.S4]
	V_FADD(0, 0, 2)

geluonlyx: // V1's lanes are computed and dropped
	GELUPIECE
	GELUEXP
	GELUPOLY
	GELUOUT
	VST1 [V0.S4], (R0)

geludone:
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
