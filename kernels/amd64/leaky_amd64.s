//go:build gc && !purego

#include "textflag.h"

// LOWLANES(n, r, k) sets mask k to the lowest n (0..15, in register n) of
// a zmm's 16 lanes, through r.
#define LOWLANES(n, r, k) \
	MOVL  $1, r \
	SHLL  n, r \
	DECL  r \
	KMOVW r, k

// LeakyRelu and the bound of a Max or Min with a constant (kernels/leaky.go
// is the spec), lane by lane with the references' bits.

// func leakyReluAVX2(dst, src []float32, alpha float32)
//
// For every i < len(dst) (a multiple of 8), 32 then 8 at a time:
//
//	v := src[i]
//	if v < 0 { v *= alpha }   // VCMPPS LT_OS, VMULPS, VBLENDVPS
//	dst[i] = v
//
// v < 0 is false for NaN and -0: those pass through with their bits.
// Register contract: DI dst, SI src, CX len(dst), AX the index, Y8 alpha,
// Y11 zero.
TEXT ·leakyReluAVX2(SB), NOSPLIT, $0-52
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	VBROADCASTSS alpha+48(FP), Y8
	VXORPS       Y11, Y11, Y11
	XORQ         AX, AX

lr32:
	LEAQ      32(AX), R10
	CMPQ      R10, CX
	JGT       lr8
	VMOVUPS   (SI)(AX*4), Y0
	VMOVUPS   32(SI)(AX*4), Y1
	VMOVUPS   64(SI)(AX*4), Y2
	VMOVUPS   96(SI)(AX*4), Y3
	VCMPPS    $1, Y11, Y0, Y4   // v < 0
	VCMPPS    $1, Y11, Y1, Y5
	VCMPPS    $1, Y11, Y2, Y6
	VCMPPS    $1, Y11, Y3, Y7
	VMULPS    Y8, Y0, Y12       // v·alpha
	VMULPS    Y8, Y1, Y13
	VMULPS    Y8, Y2, Y14
	VMULPS    Y8, Y3, Y15
	VBLENDVPS Y4, Y12, Y0, Y0   // v < 0 ? v·alpha : v
	VBLENDVPS Y5, Y13, Y1, Y1
	VBLENDVPS Y6, Y14, Y2, Y2
	VBLENDVPS Y7, Y15, Y3, Y3
	VMOVUPS   Y0, (DI)(AX*4)
	VMOVUPS   Y1, 32(DI)(AX*4)
	VMOVUPS   Y2, 64(DI)(AX*4)
	VMOVUPS   Y3, 96(DI)(AX*4)
	MOVQ      R10, AX
	JMP       lr32

lr8:
	LEAQ      8(AX), R10
	CMPQ      R10, CX
	JGT       lrdone
	VMOVUPS   (SI)(AX*4), Y0
	VCMPPS    $1, Y11, Y0, Y4
	VMULPS    Y8, Y0, Y12
	VBLENDVPS Y4, Y12, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	MOVQ      R10, AX
	JMP       lr8

lrdone:
	VZEROUPPER
	RET

// func leakyReluAVX512(dst, src []float32, alpha float32)
//
// As leakyReluAVX2, 64 then 16 at a time, then the last len(dst) mod 16
// values under the mask K1 = 1<<left − 1 (masked loads and stores touch
// no memory outside dst and src):
//
//	v := src[i]
//	if v < 0 { v *= alpha }   // VCMPPS LT_OS into K2, VMULPS under K2
//	dst[i] = v
//
// Register contract: DI dst, SI src, CX len(dst), AX the index, Z8
// alpha, Z11 zero.
TEXT ·leakyReluAVX512(SB), NOSPLIT, $0-52
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	VBROADCASTSS alpha+48(FP), Z8
	VPXORD       Z11, Z11, Z11
	XORQ         AX, AX

zr64:
	LEAQ    64(AX), R10
	CMPQ    R10, CX
	JGT     zr16
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS 64(SI)(AX*4), Z1
	VMOVUPS 128(SI)(AX*4), Z2
	VMOVUPS 192(SI)(AX*4), Z3
	VCMPPS  $1, Z11, Z0, K2      // v < 0
	VCMPPS  $1, Z11, Z1, K3
	VCMPPS  $1, Z11, Z2, K4
	VCMPPS  $1, Z11, Z3, K5
	VMULPS  Z8, Z0, K2, Z0       // v·alpha where v < 0
	VMULPS  Z8, Z1, K3, Z1
	VMULPS  Z8, Z2, K4, Z2
	VMULPS  Z8, Z3, K5, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	MOVQ    R10, AX
	JMP     zr64

zr16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     zrtail
	VMOVUPS (SI)(AX*4), Z0
	VCMPPS  $1, Z11, Z0, K2
	VMULPS  Z8, Z0, K2, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     zr16

zrtail:
	SUBQ      AX, CX             // values left, 0..15
	JZ        zrdone
	LOWLANES(CX, R11, K1)        // the left lowest lanes
	VMOVUPS.Z (SI)(AX*4), K1, Z0 // lanes past the end read as 0, touching nothing
	VCMPPS    $1, Z11, Z0, K2
	VMULPS    Z8, Z0, K2, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

zrdone:
	VZEROUPPER
	RET

// func maxMinConstAVX2(dst []float32, c float32, sign uint32)
//
// For every i < len(dst) (a multiple of 8), 32 then 8 at a time, Go's
// min(v, c) (sign 0) or max(v, c) (sign 0x80000000: min of the negated
// values, negated) as the compiler writes it for amd64:
//
//	a, b := v ^ sign, c ^ sign            (on the bits)
//	m := a < b ? a : b                    // VMINPS b, a: MINSS a, b
//	dst[i] = ((m < a ? m : a) | m) ^ sign // VMINPS a, m; VORPS; VXORPS
//
// Register contract: DI dst, CX len(dst), AX the index, Y9 b, Y10 sign.
TEXT ·maxMinConstAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	VBROADCASTSS c+24(FP), Y9
	VBROADCASTSS sign+28(FP), Y10
	VXORPS       Y10, Y9, Y9      // b = c ^ sign
	XORQ         AX, AX

mm32:
	LEAQ    32(AX), R10
	CMPQ    R10, CX
	JGT     mm8
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS 32(DI)(AX*4), Y1
	VMOVUPS 64(DI)(AX*4), Y2
	VMOVUPS 96(DI)(AX*4), Y3
	VXORPS  Y10, Y0, Y0           // a = v ^ sign
	VXORPS  Y10, Y1, Y1
	VXORPS  Y10, Y2, Y2
	VXORPS  Y10, Y3, Y3
	VMINPS  Y9, Y0, Y4            // m = a < b ? a : b
	VMINPS  Y9, Y1, Y5
	VMINPS  Y9, Y2, Y6
	VMINPS  Y9, Y3, Y7
	VMINPS  Y0, Y4, Y0            // m < a ? m : a
	VMINPS  Y1, Y5, Y1
	VMINPS  Y2, Y6, Y2
	VMINPS  Y3, Y7, Y3
	VORPS   Y4, Y0, Y0            // | m
	VORPS   Y5, Y1, Y1
	VORPS   Y6, Y2, Y2
	VORPS   Y7, Y3, Y3
	VXORPS  Y10, Y0, Y0           // ^ sign
	VXORPS  Y10, Y1, Y1
	VXORPS  Y10, Y2, Y2
	VXORPS  Y10, Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	MOVQ    R10, AX
	JMP     mm32

mm8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     mmdone
	VMOVUPS (DI)(AX*4), Y0
	VXORPS  Y10, Y0, Y0
	VMINPS  Y9, Y0, Y4
	VMINPS  Y0, Y4, Y0
	VORPS   Y4, Y0, Y0
	VXORPS  Y10, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     mm8

mmdone:
	VZEROUPPER
	RET

// func maxMinConstAVX512(dst []float32, c float32, sign uint32)
//
// As maxMinConstAVX2, 64 then 16 at a time, then the last len(dst) mod 16
// values under a mask (VPORD and VPXORD: AVX-512 F has no VORPS on zmm).
//
// Register contract: DI dst, CX len(dst), AX the index, Z9 b, Z10 sign.
TEXT ·maxMinConstAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	VBROADCASTSS c+24(FP), Z9
	VBROADCASTSS sign+28(FP), Z10
	VPXORD       Z10, Z9, Z9      // b = c ^ sign
	XORQ         AX, AX

zm64:
	LEAQ    64(AX), R10
	CMPQ    R10, CX
	JGT     zm16
	VMOVUPS (DI)(AX*4), Z0
	VMOVUPS 64(DI)(AX*4), Z1
	VMOVUPS 128(DI)(AX*4), Z2
	VMOVUPS 192(DI)(AX*4), Z3
	VPXORD  Z10, Z0, Z0           // a = v ^ sign
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	VMINPS  Z9, Z0, Z4            // m = a < b ? a : b
	VMINPS  Z9, Z1, Z5
	VMINPS  Z9, Z2, Z6
	VMINPS  Z9, Z3, Z7
	VMINPS  Z0, Z4, Z0            // m < a ? m : a
	VMINPS  Z1, Z5, Z1
	VMINPS  Z2, Z6, Z2
	VMINPS  Z3, Z7, Z3
	VPORD   Z4, Z0, Z0            // | m
	VPORD   Z5, Z1, Z1
	VPORD   Z6, Z2, Z2
	VPORD   Z7, Z3, Z3
	VPXORD  Z10, Z0, Z0           // ^ sign
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	MOVQ    R10, AX
	JMP     zm64

zm16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     zmtail
	VMOVUPS (DI)(AX*4), Z0
	VPXORD  Z10, Z0, Z0
	VMINPS  Z9, Z0, Z4
	VMINPS  Z0, Z4, Z0
	VPORD   Z4, Z0, Z0
	VPXORD  Z10, Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     zm16

zmtail:
	SUBQ      AX, CX             // values left, 0..15
	JZ        zmdone
	LOWLANES(CX, R11, K1)        // the left lowest lanes
	VMOVUPS.Z (DI)(AX*4), K1, Z0 // lanes past the end read as 0, touching nothing
	VPXORD    Z10, Z0, Z0
	VMINPS    Z9, Z0, Z4
	VMINPS    Z0, Z4, Z0
	VPORD     Z4, Z0, Z0
	VPXORD    Z10, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

zmdone:
	VZEROUPPER
	RET

// func maxPairAVX2(dst, a, b []float32)
//
// For every i < len(dst) (a multiple of 8), 16 then 8 at a time, Go's
// max(a[i], b[i]) as the compiler writes it for amd64 (see
// maxMinConstAVX2: the min of the negated values, negated):
//
//	x, y := a[i] ^ 1<<31, b[i] ^ 1<<31    (on the bits)
//	m := x < y ? x : y                     // VMINPS y, x: MINSS x, y
//	dst[i] = ((m < x ? m : x) | m) ^ 1<<31 // VMINPS x, m; VORPS; VXORPS
//
// Register contract: DI dst, SI a, BX b, CX len(dst), AX the index, Y10
// the sign bit.
TEXT ·maxPairAVX2(SB), NOSPLIT, $0-72
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	MOVQ         b_base+48(FP), BX
	MOVL         $0x80000000, AX
	MOVL         AX, X10
	VPBROADCASTD X10, Y10
	XORQ         AX, AX

mp16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     mp8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS (BX)(AX*4), Y2
	VMOVUPS 32(BX)(AX*4), Y3
	VXORPS  Y10, Y0, Y0     // x
	VXORPS  Y10, Y1, Y1
	VXORPS  Y10, Y2, Y2     // y
	VXORPS  Y10, Y3, Y3
	VMINPS  Y2, Y0, Y4      // m = x < y ? x : y
	VMINPS  Y3, Y1, Y5
	VMINPS  Y0, Y4, Y0      // m < x ? m : x
	VMINPS  Y1, Y5, Y1
	VORPS   Y4, Y0, Y0      // | m
	VORPS   Y5, Y1, Y1
	VXORPS  Y10, Y0, Y0     // ^ sign
	VXORPS  Y10, Y1, Y1
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	MOVQ    R10, AX
	JMP     mp16

mp8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     mpdone
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (BX)(AX*4), Y2
	VXORPS  Y10, Y0, Y0
	VXORPS  Y10, Y2, Y2
	VMINPS  Y2, Y0, Y4
	VMINPS  Y0, Y4, Y0
	VORPS   Y4, Y0, Y0
	VXORPS  Y10, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     mp8

mpdone:
	VZEROUPPER
	RET

// func maxColsAVX2(dst, src []float32, n, ch, step, taps, tapStep int)
//
// For each of n pixels, each 8 of its ch channels (a multiple of 8): the
// first tap's values, then for each further tap maxPairAVX2's steps with
// the running maximum kept negated (x) between taps, and negated back
// when stored.
//
// Registers: SI the pixel's first tap, DI its output, R8 step and R10
// tapStep in bytes, R9 taps, DX ch, BX the pixels left, AX the channel,
// R11 the tap, R12 its count, Y10 the sign bit.
TEXT ·maxColsAVX2(SB), NOSPLIT, $0-88
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         n+48(FP), BX
	MOVQ         ch+56(FP), DX
	MOVQ         step+64(FP), R8
	SHLQ         $2, R8
	MOVQ         taps+72(FP), R9
	MOVQ         tapStep+80(FP), R10
	SHLQ         $2, R10
	MOVL         $0x80000000, AX
	MOVL         AX, X10
	VPBROADCASTD X10, Y10

mcpixel:
	TESTQ BX, BX
	JZ    mcdone
	XORQ  AX, AX

mcchan:
	VMOVUPS (SI)(AX*4), Y0
	VXORPS  Y10, Y0, Y0 // x
	MOVQ    SI, R11
	MOVQ    $1, R12

mctap:
	CMPQ    R12, R9
	JGE     mcstore
	ADDQ    R10, R11
	VMOVUPS (R11)(AX*4), Y2
	VXORPS  Y10, Y2, Y2 // y
	VMINPS  Y2, Y0, Y4  // m = x < y ? x : y
	VMINPS  Y0, Y4, Y0  // m < x ? m : x
	VORPS   Y4, Y0, Y0  // | m
	INCQ    R12
	JMP     mctap

mcstore:
	VXORPS  Y10, Y0, Y0 // ^ sign
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     mcchan
	ADDQ    R8, SI
	LEAQ    (DI)(DX*4), DI
	DECQ    BX
	JMP     mcpixel

mcdone:
	VZEROUPPER
	RET

// MAXZ(y, x) sets x to Go's max of the values x and y stand for, both
// held with their sign flipped (maxPairAVX2's steps on zmm, y clobbered):
// m = x < y ? x : y into y, then (m < x ? m : x) | m into x.
#define MAXZ(y, x) \
	VMINPS y, x, y \
	VMINPS x, y, x \
	VPORD  y, x, x

// func maxPairAVX512(dst, a, b []float32)
//
// As maxPairAVX2, 64 then 16 at a time, then the last len(dst) mod 16
// values under a mask.
//
// Register contract: DI dst, SI a, BX b, CX len(dst), AX the index, Z10
// the sign bit.
TEXT ·maxPairAVX512(SB), NOSPLIT, $0-72
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         a_base+24(FP), SI
	MOVQ         b_base+48(FP), BX
	MOVL         $0x80000000, AX
	MOVL         AX, X10
	VPBROADCASTD X10, Z10
	XORQ         AX, AX

zp64:
	LEAQ    64(AX), R10
	CMPQ    R10, CX
	JGT     zp16
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS 64(SI)(AX*4), Z1
	VMOVUPS 128(SI)(AX*4), Z2
	VMOVUPS 192(SI)(AX*4), Z3
	VPXORD  (BX)(AX*4), Z10, Z4     // y
	VPXORD  64(BX)(AX*4), Z10, Z5
	VPXORD  128(BX)(AX*4), Z10, Z6
	VPXORD  192(BX)(AX*4), Z10, Z7
	VPXORD  Z10, Z0, Z0             // x
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	MAXZ(Z4, Z0)
	MAXZ(Z5, Z1)
	MAXZ(Z6, Z2)
	MAXZ(Z7, Z3)
	VPXORD  Z10, Z0, Z0             // ^ sign
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	MOVQ    R10, AX
	JMP     zp64

zp16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     zptail
	VMOVUPS (SI)(AX*4), Z0
	VPXORD  (BX)(AX*4), Z10, Z4
	VPXORD  Z10, Z0, Z0
	MAXZ(Z4, Z0)
	VPXORD  Z10, Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     zp16

zptail:
	SUBQ      AX, CX             // values left, 0..15
	JZ        zpdone
	LOWLANES(CX, R11, K1)        // the left lowest lanes
	VMOVUPS.Z (SI)(AX*4), K1, Z0 // lanes past the end read as 0, touching nothing
	VMOVUPS.Z (BX)(AX*4), K1, Z4
	VPXORD    Z10, Z4, Z4
	VPXORD    Z10, Z0, Z0
	MAXZ(Z4, Z0)
	VPXORD    Z10, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

zpdone:
	VZEROUPPER
	RET

// func maxColsAVX512(dst, src []float32, n, ch, step, taps, tapStep int)
//
// For each of n pixels, the channels 64 at a time (four independent
// running maxima: the taps of one are a chain of dependent steps), then 16,
// then the last ch mod 16 under a mask: the first tap's values, then for
// each further tap maxPairAVX2's steps with the running maximum as x.
//
// Register contract: DI dst, SI src, BX pixels left, DX ch, R8 step and
// R10 tapStep in bytes, R9 taps, AX the channel index, R11 the tap's
// address, R12 the tap, Z10 the sign bit, K1 the tail's lanes.
TEXT ·maxColsAVX512(SB), NOSPLIT, $0-88
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         n+48(FP), BX
	MOVQ         ch+56(FP), DX
	MOVQ         step+64(FP), R8
	SHLQ         $2, R8
	MOVQ         taps+72(FP), R9
	MOVQ         tapStep+80(FP), R10
	SHLQ         $2, R10
	MOVL         $0x80000000, AX
	MOVL         AX, X10
	VPBROADCASTD X10, Z10
	MOVQ         DX, CX
	ANDQ         $15, CX
	LOWLANES(CX, AX, K1)      // the last ch mod 16 lanes

zcpixel:
	TESTQ BX, BX
	JZ    zcdone
	XORQ  AX, AX

zc64:
	LEAQ    64(AX), CX
	CMPQ    CX, DX
	JGT     zc16
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS 64(SI)(AX*4), Z1
	VMOVUPS 128(SI)(AX*4), Z2
	VMOVUPS 192(SI)(AX*4), Z3
	VPXORD  Z10, Z0, Z0        // x
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	MOVQ    SI, R11
	MOVQ    $1, R12

zc64tap:
	CMPQ    R12, R9
	JGE     zc64store
	ADDQ    R10, R11
	VPXORD  (R11)(AX*4), Z10, Z4    // y
	VPXORD  64(R11)(AX*4), Z10, Z5
	VPXORD  128(R11)(AX*4), Z10, Z6
	VPXORD  192(R11)(AX*4), Z10, Z7
	MAXZ(Z4, Z0)
	MAXZ(Z5, Z1)
	MAXZ(Z6, Z2)
	MAXZ(Z7, Z3)
	INCQ    R12
	JMP     zc64tap

zc64store:
	VPXORD  Z10, Z0, Z0 // ^ sign
	VPXORD  Z10, Z1, Z1
	VPXORD  Z10, Z2, Z2
	VPXORD  Z10, Z3, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	MOVQ    CX, AX
	JMP     zc64

zc16:
	LEAQ    16(AX), CX
	CMPQ    CX, DX
	JGT     zctail
	VMOVUPS (SI)(AX*4), Z0
	VPXORD  Z10, Z0, Z0
	MOVQ    SI, R11
	MOVQ    $1, R12

zc16tap:
	CMPQ    R12, R9
	JGE     zc16store
	ADDQ    R10, R11
	VPXORD  (R11)(AX*4), Z10, Z4
	MAXZ(Z4, Z0)
	INCQ    R12
	JMP     zc16tap

zc16store:
	VPXORD  Z10, Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    CX, AX
	JMP     zc16

zctail:
	CMPQ      AX, DX
	JGE       zcnext
	VMOVUPS.Z (SI)(AX*4), K1, Z0 // lanes past the channels read as 0, touching nothing
	VPXORD    Z10, Z0, Z0
	MOVQ      SI, R11
	MOVQ      $1, R12

zctailtap:
	CMPQ      R12, R9
	JGE       zctailstore
	ADDQ      R10, R11
	VMOVUPS.Z (R11)(AX*4), K1, Z4
	VPXORD    Z10, Z4, Z4
	MAXZ(Z4, Z0)
	INCQ      R12
	JMP       zctailtap

zctailstore:
	VPXORD  Z10, Z0, Z0
	VMOVUPS Z0, K1, (DI)(AX*4)

zcnext:
	ADDQ R8, SI
	LEAQ (DI)(DX*4), DI
	DECQ BX
	JMP  zcpixel

zcdone:
	VZEROUPPER
	RET
