//go:build gc && !purego

#include "textflag.h"

// A quantize-dequantize pair in one pass (kernels/fakequant.go is the
// spec), lane by lane with the reference's float32 operations in its
// order: VDIVPS, VADDPS twice, the clamp's two ifs as VMAXPS and VMINPS
// (with the bound first, lo > u ? lo : u and hi < u ? hi : u, for the
// pair; with u first for the table's index, so NaN goes to 0), then
// VMULPS or the look-up. Each block of values is checked finite before
// any of it is stored, so the kernels stop at the start of the block
// holding the first value that is not, with nothing of that block
// written.

// func fakeQuantAVX2(dst, src []float32, qs, shift, lo, hi, ds float32) int
//
// For every i < len(src) (a multiple of 8), 32 then 8 at a time, while
// the block's values are finite:
//
//	u := src[i]/qs + 1.5·2^23 + shift   // VDIVPS, VADDPS, VADDPS
//	u = min(hi, max(lo, u))             // VMAXPS, VMINPS
//	dst[i] = u·ds                       // VMULPS
//
// and returns the index it stopped at (len(src) when every value is
// finite). Finiteness: x − x is +0 for a finite x and NaN otherwise; the
// OR of a block's differences is zero when all are finite (VPTEST).
// Register contract: DI dst, SI src, CX len(src), AX the index, Y8 qs,
// Y9 1.5·2^23, Y10 shift, Y11 lo, Y12 hi, Y13 ds.
TEXT ·fakeQuantAVX2(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS qs+48(FP), Y8
	VBROADCASTSS shift+52(FP), Y10
	VBROADCASTSS lo+56(FP), Y11
	VBROADCASTSS hi+60(FP), Y12
	VBROADCASTSS ds+64(FP), Y13
	MOVL         $0x4b400000, R8 // 1.5·2^23
	MOVQ         R8, X9
	VBROADCASTSS X9, Y9
	XORQ         AX, AX

fq32:
	LEAQ    32(AX), R10
	CMPQ    R10, CX
	JGT     fq8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VSUBPS  Y0, Y0, Y4       // x − x: NaN where x is not finite
	VSUBPS  Y1, Y1, Y5
	VSUBPS  Y2, Y2, Y6
	VSUBPS  Y3, Y3, Y7
	VORPS   Y5, Y4, Y4
	VORPS   Y7, Y6, Y6
	VORPS   Y6, Y4, Y4
	VPTEST  Y4, Y4
	JNZ     fqstop           // a value of the block is not finite
	VDIVPS  Y8, Y0, Y0       // x/qs
	VDIVPS  Y8, Y1, Y1
	VDIVPS  Y8, Y2, Y2
	VDIVPS  Y8, Y3, Y3
	VADDPS  Y9, Y0, Y0       // + 1.5·2^23: rounded to an integer
	VADDPS  Y9, Y1, Y1
	VADDPS  Y9, Y2, Y2
	VADDPS  Y9, Y3, Y3
	VADDPS  Y10, Y0, Y0      // + shift
	VADDPS  Y10, Y1, Y1
	VADDPS  Y10, Y2, Y2
	VADDPS  Y10, Y3, Y3
	VMAXPS  Y0, Y11, Y0      // lo > u ? lo : u
	VMAXPS  Y1, Y11, Y1
	VMAXPS  Y2, Y11, Y2
	VMAXPS  Y3, Y11, Y3
	VMINPS  Y0, Y12, Y0      // hi < u ? hi : u
	VMINPS  Y1, Y12, Y1
	VMINPS  Y2, Y12, Y2
	VMINPS  Y3, Y12, Y3
	VMULPS  Y13, Y0, Y0      // ·ds
	VMULPS  Y13, Y1, Y1
	VMULPS  Y13, Y2, Y2
	VMULPS  Y13, Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	MOVQ    R10, AX
	JMP     fq32

fq8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     fqstop
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y0, Y0, Y4
	VPTEST  Y4, Y4
	JNZ     fqstop
	VDIVPS  Y8, Y0, Y0
	VADDPS  Y9, Y0, Y0
	VADDPS  Y10, Y0, Y0
	VMAXPS  Y0, Y11, Y0
	VMINPS  Y0, Y12, Y0
	VMULPS  Y13, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     fq8

fqstop:
	MOVQ AX, ret+72(FP)
	VZEROUPPER
	RET

// LOOKUP4(off) replaces the 4 int32 indices at off(R13) by their lut
// (R8) entries, through R11, R12, BX and DX.
#define LOOKUP4(off) \
	MOVL off(R13), R11; MOVL off+4(R13), R12; MOVL off+8(R13), BX; MOVL off+12(R13), DX; \
	MOVL (R8)(R11*4), R11; MOVL (R8)(R12*4), R12; MOVL (R8)(BX*4), BX; MOVL (R8)(DX*4), DX; \
	MOVL R11, off(R13); MOVL R12, off+4(R13); MOVL BX, off+8(R13); MOVL DX, off+12(R13)

// func fakeQuantTableAVX2(dst, src []float32, qs, shift float32, lut *[256]float32) int
//
// For every i < len(src) (a multiple of 8), 32 then 8 at a time, while
// the block's values are finite (checked as fakeQuantAVX2 does):
//
//	u := src[i]/qs + 1.5·2^23 + shift   // VDIVPS, VADDPS, VADDPS
//	u = u > 0 ? u : 0                   // VMAXPS with u first: NaN to 0
//	u = u < 255 ? u : 255               // VMINPS
//	dst[i] = lut[int32(u)]              // VCVTTPS2DQ, stored; LOOKUP4
//
// u is then an integer in [0, 255] whatever qs is, so the loads read
// inside lut. The indices go to dst, then one at a time through lut
// (scalar loads: VPGATHERDD measured no faster on AMD Zen 4, and the
// microcode that mitigates Intel's GDS slows gathers down).
// Register contract: DI dst, SI src, CX len(src), AX the index, R8 lut,
// R13 &dst[AX], R11, R12, BX, DX LOOKUP4's, Y8 qs, Y9 1.5·2^23, Y10
// shift, Y11 0, Y12 255.
TEXT ·fakeQuantTableAVX2(SB), NOSPLIT, $0-72
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS qs+48(FP), Y8
	VBROADCASTSS shift+52(FP), Y10
	MOVQ         lut+56(FP), R8
	MOVL         $0x4b400000, R9 // 1.5·2^23
	MOVQ         R9, X9
	VBROADCASTSS X9, Y9
	MOVL         $0x437f0000, R9 // 255
	MOVQ         R9, X12
	VBROADCASTSS X12, Y12
	VXORPS       Y11, Y11, Y11
	XORQ         AX, AX

tb32:
	LEAQ       32(AX), R10
	CMPQ       R10, CX
	JGT        tb8
	VMOVUPS    (SI)(AX*4), Y0
	VMOVUPS    32(SI)(AX*4), Y1
	VMOVUPS    64(SI)(AX*4), Y2
	VMOVUPS    96(SI)(AX*4), Y3
	VSUBPS     Y0, Y0, Y4           // x − x: NaN where x is not finite
	VSUBPS     Y1, Y1, Y5
	VSUBPS     Y2, Y2, Y6
	VSUBPS     Y3, Y3, Y7
	VORPS      Y5, Y4, Y4
	VORPS      Y7, Y6, Y6
	VORPS      Y6, Y4, Y4
	VPTEST     Y4, Y4
	JNZ        tbstop
	VDIVPS     Y8, Y0, Y0           // x/qs
	VDIVPS     Y8, Y1, Y1
	VDIVPS     Y8, Y2, Y2
	VDIVPS     Y8, Y3, Y3
	VADDPS     Y9, Y0, Y0           // + 1.5·2^23
	VADDPS     Y9, Y1, Y1
	VADDPS     Y9, Y2, Y2
	VADDPS     Y9, Y3, Y3
	VADDPS     Y10, Y0, Y0          // + shift
	VADDPS     Y10, Y1, Y1
	VADDPS     Y10, Y2, Y2
	VADDPS     Y10, Y3, Y3
	VMAXPS     Y11, Y0, Y0          // u > 0 ? u : 0
	VMAXPS     Y11, Y1, Y1
	VMAXPS     Y11, Y2, Y2
	VMAXPS     Y11, Y3, Y3
	VMINPS     Y12, Y0, Y0          // u < 255 ? u : 255
	VMINPS     Y12, Y1, Y1
	VMINPS     Y12, Y2, Y2
	VMINPS     Y12, Y3, Y3
	VCVTTPS2DQ Y0, Y0               // the indices
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	VMOVDQU    Y0, (DI)(AX*4)       // the indices, into dst
	VMOVDQU    Y1, 32(DI)(AX*4)
	VMOVDQU    Y2, 64(DI)(AX*4)
	VMOVDQU    Y3, 96(DI)(AX*4)
	LEAQ       (DI)(AX*4), R13
	LOOKUP4(0)                      // dst[i] = lut[dst[i]]
	LOOKUP4(16)
	LOOKUP4(32)
	LOOKUP4(48)
	LOOKUP4(64)
	LOOKUP4(80)
	LOOKUP4(96)
	LOOKUP4(112)
	MOVQ       R10, AX
	JMP        tb32

tb8:
	LEAQ       8(AX), R10
	CMPQ       R10, CX
	JGT        tbstop
	VMOVUPS    (SI)(AX*4), Y0
	VSUBPS     Y0, Y0, Y4
	VPTEST     Y4, Y4
	JNZ        tbstop
	VDIVPS     Y8, Y0, Y0
	VADDPS     Y9, Y0, Y0
	VADDPS     Y10, Y0, Y0
	VMAXPS     Y11, Y0, Y0
	VMINPS     Y12, Y0, Y0
	VCVTTPS2DQ Y0, Y0
	VMOVDQU    Y0, (DI)(AX*4)
	LEAQ       (DI)(AX*4), R13
	LOOKUP4(0)
	LOOKUP4(16)
	MOVQ       R10, AX
	JMP        tb8

tbstop:
	MOVQ AX, ret+64(FP)
	VZEROUPPER
	RET

// FQ16(r, off) runs the pair's steps on the 16 values in Zr (the
// block's at off(DI) on store), as fakeQuantAVX2 does on 8: VDIVPS,
// VADDPS twice, VMAXPS and VMINPS with the bound first, VMULPS.
#define FQ16(r, off) \
	VDIVPS  Z8, r, r; \
	VADDPS  Z9, r, r; \
	VADDPS  Z10, r, r; \
	VMAXPS  r, Z11, r; \
	VMINPS  r, Z12, r; \
	VMULPS  Z13, r, r; \
	VMOVUPS r, off(DI)(AX*4)

// MULQ16(r, t, a, d, k) starts the pair on the 16 values in Zr with a
// multiplication instead of the division: Zt = x·(1/qs), Za = Zt +
// 1.5·2^23 (Zt rounded to an integer, plus 1.5·2^23), and Kk the lanes
// whose Zt lies within 0.5 − 2^-11 of a midpoint between integers, or is
// not finite (|Zt − (Za − 1.5·2^23)| not below Z15, unordered).
#define MULQ16(r, t, a, d, k) \
	VMULPS  Z14, r, t; \
	VADDPS  Z9, t, a; \
	VSUBPS  Z9, a, d; \
	VSUBPS  d, t, d; \
	VANDPS  Z16, d, d; \
	VCMPPS  $5, Z15, d, k

// ENDQ16(a, off) ends what MULQ16 started: Za plus the shift, clamped,
// times ds, stored at off(DI).
#define ENDQ16(a, off) \
	VADDPS  Z10, a, a; \
	VMAXPS  a, Z11, a; \
	VMINPS  a, Z12, a; \
	VMULPS  Z13, a, a; \
	VMOVUPS a, off(DI)(AX*4)

// func fakeQuantAVX512(dst, src []float32, qs, shift, lo, hi, ds float32) int
//
// fakeQuantAVX2 in zmm registers: for every i < len(src) (a multiple of
// 16), 64 then 16 at a time, while the block's values are finite (x − x
// is +0 for each: the OR of the differences has no bit set, VPTESTMD),
// the pair's output; it returns the index it stopped at. Register
// contract as fakeQuantAVX2's, in Z registers, and Z14 1/qs, Z15
// 0.5 − 2^-11, Z16 the sign bit's complement.
//
// A zmm division takes about as long as ten multiplications, so a block
// first multiplies by 1/qs. For |x/qs| up to 512 the product t is within
// 3·2^-24 of it relatively, 2^-13 at most, so where t lies further than
// 2^-11 from a midpoint k + 1/2 the quotient rounds to t's integer, and
// its sum with 1.5·2^23 is t's. Larger quotients (up to 2^22, past which
// the product's sum is checked like any other) round to integers beyond
// every bound of the clamp, within one of each other, and clamp alike. A
// block with a lane near a midpoint (about one lane in a thousand of
// random values), with 1/qs infinite, or with a value not finite (whose
// product is not either), is checked finite and runs the division
// instead: the same bits either way.
TEXT ·fakeQuantAVX512(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS qs+48(FP), Z8
	VBROADCASTSS shift+52(FP), Z10
	VBROADCASTSS lo+56(FP), Z11
	VBROADCASTSS hi+60(FP), Z12
	VBROADCASTSS ds+64(FP), Z13
	MOVL         $0x4b400000, R8 // 1.5·2^23
	VPBROADCASTD R8, Z9
	MOVL         $0x3f800000, R8 // 1
	VPBROADCASTD R8, Z14
	VDIVPS       Z8, Z14, Z14    // 1/qs
	MOVL         $0x3effc000, R8 // 0.5 − 2^-11
	VPBROADCASTD R8, Z15
	MOVL         $0x7fffffff, R8
	VPBROADCASTD R8, Z16
	XORQ         AX, AX

fz64:
	LEAQ     64(AX), R10
	CMPQ     R10, CX
	JGT      fz16
	VMOVUPS  (SI)(AX*4), Z0
	VMOVUPS  64(SI)(AX*4), Z1
	VMOVUPS  128(SI)(AX*4), Z2
	VMOVUPS  192(SI)(AX*4), Z3
	MULQ16(Z0, Z4, Z17, Z18, K2)
	MULQ16(Z1, Z5, Z19, Z20, K3)
	MULQ16(Z2, Z6, Z21, Z22, K4)
	MULQ16(Z3, Z7, Z23, Z24, K5)
	KORW     K3, K2, K2
	KORW     K5, K4, K4
	KORTESTW K4, K2
	JNZ      fz64div         // a lane near a midpoint, or not finite
	ENDQ16(Z17, 0)
	ENDQ16(Z19, 64)
	ENDQ16(Z21, 128)
	ENDQ16(Z23, 192)
	MOVQ     R10, AX
	JMP      fz64

fz64div:
	VSUBPS   Z0, Z0, Z4      // x − x: NaN where x is not finite
	VSUBPS   Z1, Z1, Z5
	VSUBPS   Z2, Z2, Z6
	VSUBPS   Z3, Z3, Z7
	VPORD    Z5, Z4, Z4
	VPORD    Z7, Z6, Z6
	VPORD    Z6, Z4, Z4
	VPTESTMD Z4, Z4, K1
	KORTESTW K1, K1
	JNZ      fzstop          // a value of the block is not finite
	FQ16(Z0, 0)
	FQ16(Z1, 64)
	FQ16(Z2, 128)
	FQ16(Z3, 192)
	MOVQ     R10, AX
	JMP      fz64

fz16:
	LEAQ     16(AX), R10
	CMPQ     R10, CX
	JGT      fzstop
	VMOVUPS  (SI)(AX*4), Z0
	MULQ16(Z0, Z4, Z17, Z18, K2)
	KORTESTW K2, K2
	JNZ      fz16div
	ENDQ16(Z17, 0)
	MOVQ     R10, AX
	JMP      fz16

fz16div:
	VSUBPS   Z0, Z0, Z4
	VPTESTMD Z4, Z4, K1
	KORTESTW K1, K1
	JNZ      fzstop
	FQ16(Z0, 0)
	MOVQ     R10, AX
	JMP      fz16

fzstop:
	MOVQ AX, ret+72(FP)
	VZEROUPPER
	RET

// MULT16 is MULQ16 on the 16 values in Z0 for fakeQuantTableAVX512's
// registers: Z1 = x·(1/qs), Z2 = Z1 + 1.5·2^23, K1 the lanes near a
// midpoint or not finite (Z13 the sign bit's complement), Z3 scratch.
#define MULT16 \
	VMULPS  Z14, Z0, Z1; \
	VADDPS  Z9, Z1, Z2; \
	VSUBPS  Z9, Z2, Z3; \
	VSUBPS  Z3, Z1, Z3; \
	VANDPS  Z13, Z3, Z3; \
	VCMPPS  $5, Z15, Z3, K1

// INDEX16 turns Z2 (the quotient plus 1.5·2^23) into the look-up's
// index: plus the shift, at least 0 (NaN to 0: Z2 first), at most 255,
// truncated.
#define INDEX16 \
	VADDPS     Z10, Z2, Z2; \
	VMAXPS     Z11, Z2, Z2; \
	VMINPS     Z12, Z2, Z2; \
	VCVTTPS2DQ Z2, Z2

// PAIR32(lo, hi, dst) sets Zdst to the entries of lut's 32 in Zlo, Zhi
// at the indices' low five bits (VPERMI2PS overwrites its index operand:
// a copy of Z2).
#define PAIR32(lo, hi, dst) \
	VMOVDQA32 Z2, dst; \
	VPERMI2PS hi, lo, dst

// LOOKUP16 stores at (DI)(AX*4) lut's entries at the 16 indices in Z2:
// eight two-register look-ups of 32 entries each, merged by the
// indices' bits 5, 6 and 7 (K5, K6, K7).
#define LOOKUP16 \
	VPTESTMD  Z5, Z2, K5; \
	VPTESTMD  Z6, Z2, K6; \
	VPTESTMD  Z7, Z2, K7; \
	PAIR32(Z16, Z17, Z0); \
	PAIR32(Z18, Z19, Z1); \
	VBLENDMPS Z1, Z0, K5, Z0; \
	PAIR32(Z20, Z21, Z1); \
	PAIR32(Z22, Z23, Z3); \
	VBLENDMPS Z3, Z1, K5, Z1; \
	VBLENDMPS Z1, Z0, K6, Z0; \
	PAIR32(Z24, Z25, Z1); \
	PAIR32(Z26, Z27, Z3); \
	VBLENDMPS Z3, Z1, K5, Z1; \
	PAIR32(Z28, Z29, Z3); \
	PAIR32(Z30, Z31, Z4); \
	VBLENDMPS Z4, Z3, K5, Z3; \
	VBLENDMPS Z3, Z1, K6, Z1; \
	VBLENDMPS Z1, Z0, K7, Z0; \
	VMOVUPS   Z0, (DI)(AX*4)

// func fakeQuantTableAVX512(dst, src []float32, qs, shift float32, lut *[256]float32) int
//
// fakeQuantTableAVX2 in zmm registers, 16 values at a time, with lut
// held in Z16-Z31 and looked up by permutations instead of one value at
// a time. The quotient x/qs is first taken as x·(1/qs), as
// fakeQuantAVX512 takes it: where that product lies further than 2^-11
// from a midpoint it rounds as the quotient does, and where the two
// differ (quotients of 512 or more) the index clamps alike, the shift
// (qz − least − 1.5·2^23) moving it by less than 256. A block with a lane
// near a midpoint, or not finite, is checked finite and divides.
// Register contract: DI dst, SI src, CX len(src), AX the index, R8 lut,
// Z0-Z4 scratch, Z5, Z6, Z7 32, 64 and 128, Z8 qs, Z9 1.5·2^23, Z10
// shift, Z11 0, Z12 255, Z13 the sign bit's complement, Z14 1/qs, Z15
// 0.5 − 2^-11, Z16-Z31 lut.
TEXT ·fakeQuantTableAVX512(SB), NOSPLIT, $0-72
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS qs+48(FP), Z8
	VBROADCASTSS shift+52(FP), Z10
	MOVQ         lut+56(FP), R8
	MOVL         $32, R9
	VPBROADCASTD R9, Z5
	MOVL         $64, R9
	VPBROADCASTD R9, Z6
	MOVL         $128, R9
	VPBROADCASTD R9, Z7
	MOVL         $0x4b400000, R9 // 1.5·2^23
	VPBROADCASTD R9, Z9
	VPXORD       Z11, Z11, Z11
	MOVL         $0x437f0000, R9 // 255
	VPBROADCASTD R9, Z12
	MOVL         $0x7fffffff, R9
	VPBROADCASTD R9, Z13
	MOVL         $0x3f800000, R9 // 1
	VPBROADCASTD R9, Z14
	VDIVPS       Z8, Z14, Z14    // 1/qs
	MOVL         $0x3effc000, R9 // 0.5 − 2^-11
	VPBROADCASTD R9, Z15
	VMOVUPS      (R8), Z16
	VMOVUPS      64(R8), Z17
	VMOVUPS      128(R8), Z18
	VMOVUPS      192(R8), Z19
	VMOVUPS      256(R8), Z20
	VMOVUPS      320(R8), Z21
	VMOVUPS      384(R8), Z22
	VMOVUPS      448(R8), Z23
	VMOVUPS      512(R8), Z24
	VMOVUPS      576(R8), Z25
	VMOVUPS      640(R8), Z26
	VMOVUPS      704(R8), Z27
	VMOVUPS      768(R8), Z28
	VMOVUPS      832(R8), Z29
	VMOVUPS      896(R8), Z30
	VMOVUPS      960(R8), Z31
	XORQ         AX, AX

ft16:
	LEAQ     16(AX), R10
	CMPQ     R10, CX
	JGT      ftstop
	VMOVUPS  (SI)(AX*4), Z0
	MULT16
	KORTESTW K1, K1
	JNZ      ft16div         // a lane near a midpoint, or not finite
	INDEX16
	LOOKUP16
	MOVQ     R10, AX
	JMP      ft16

ft16div:
	VSUBPS   Z0, Z0, Z3      // x − x: NaN where x is not finite
	VPTESTMD Z3, Z3, K1
	KORTESTW K1, K1
	JNZ      ftstop          // a value of the block is not finite
	VDIVPS   Z8, Z0, Z2      // x/qs
	VADDPS   Z9, Z2, Z2      // + 1.5·2^23
	INDEX16
	LOOKUP16
	MOVQ     R10, AX
	JMP      ft16

ftstop:
	MOVQ AX, ret+64(FP)
	VZEROUPPER
	RET
