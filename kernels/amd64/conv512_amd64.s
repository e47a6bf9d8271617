//go:build gc && !purego

#include "textflag.h"

// func convFinishAVX512(dst, bias, res []float32, lo, hi float32)
//
// convFinishAVX2 on 32 then 16 values a step, the last len(dst) % 16
// under the mask K1 (masked loads and stores touch nothing past them):
//
//	v := dst[i] + bias[i] + res[i]   (each term only when its slice is not empty)
//	if lo > v { v = lo }             // VMAXPS v, lo: lo > v ? lo : v
//	if hi < v { v = hi }             // VMINPS v, hi: hi < v ? hi : v
//	dst[i] = v
//
// Register contract: DI dst, SI bias, DX res, CX len(dst), R8/R9 the
// lengths of bias and res (0: absent), AX the index, Z2/Z3 lo/hi.
TEXT ·convFinishAVX512(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         bias_base+24(FP), SI
	MOVQ         bias_len+32(FP), R8
	MOVQ         res_base+48(FP), DX
	MOVQ         res_len+56(FP), R9
	VBROADCASTSS lo+72(FP), Z2
	VBROADCASTSS hi+76(FP), Z3
	XORQ         AX, AX

fin32:
	LEAQ    32(AX), R10
	CMPQ    R10, CX
	JGT     fin16
	VMOVUPS (DI)(AX*4), Z0
	VMOVUPS 64(DI)(AX*4), Z1
	TESTQ   R8, R8
	JZ      fin32res
	VADDPS  (SI)(AX*4), Z0, Z0   // + bias
	VADDPS  64(SI)(AX*4), Z1, Z1
fin32res:
	TESTQ   R9, R9
	JZ      fin32clamp
	VADDPS  (DX)(AX*4), Z0, Z0   // + residual
	VADDPS  64(DX)(AX*4), Z1, Z1
fin32clamp:
	VMAXPS  Z0, Z2, Z0
	VMAXPS  Z1, Z2, Z1
	VMINPS  Z0, Z3, Z0
	VMINPS  Z1, Z3, Z1
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	MOVQ    R10, AX
	JMP     fin32

fin16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     fintail
	VMOVUPS (DI)(AX*4), Z0
	TESTQ   R8, R8
	JZ      fin16res
	VADDPS  (SI)(AX*4), Z0, Z0
fin16res:
	TESTQ   R9, R9
	JZ      fin16clamp
	VADDPS  (DX)(AX*4), Z0, Z0
fin16clamp:
	VMAXPS  Z0, Z2, Z0
	VMINPS  Z0, Z3, Z0
	VMOVUPS Z0, (DI)(AX*4)
	MOVQ    R10, AX

fintail:
	SUBQ      AX, CX             // values left, 0..15
	JZ        findone
	MOVL      $1, R10
	SHLL      CX, R10
	DECL      R10
	KMOVW     R10, K1            // the left lowest lanes
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	TESTQ     R8, R8
	JZ        fintailres
	VMOVUPS.Z (SI)(AX*4), K1, Z1
	VADDPS    Z1, Z0, Z0
fintailres:
	TESTQ     R9, R9
	JZ        fintailclamp
	VMOVUPS.Z (DX)(AX*4), K1, Z1
	VADDPS    Z1, Z0, Z0
fintailclamp:
	VMAXPS    Z0, Z2, Z0
	VMINPS    Z0, Z3, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

findone:
	VZEROUPPER
	RET

// HARD4T sets Z1, Z3, Z5, Z7 to t of the four vectors at dst[AX:] (x in
// Z0, Z2, Z4, Z6); HARD4XT makes each x·t; HARD4STORE writes them back.
#define HARD4T \
	VMOVUPS   0(DI)(AX*4), Z0 \
	VMOVUPS   64(DI)(AX*4), Z2 \
	VMOVUPS   128(DI)(AX*4), Z4 \
	VMOVUPS   192(DI)(AX*4), Z6 \
	VMULPS    Z8, Z0, Z1 \
	VMULPS    Z8, Z2, Z3 \
	VMULPS    Z8, Z4, Z5 \
	VMULPS    Z8, Z6, Z7 \
	VADDPS    Z9, Z1, Z1 \
	VADDPS    Z9, Z3, Z3 \
	VADDPS    Z9, Z5, Z5 \
	VADDPS    Z9, Z7, Z7 \
	VMAXPS    Z1, Z10, Z1 \
	VMAXPS    Z3, Z10, Z3 \
	VMAXPS    Z5, Z10, Z5 \
	VMAXPS    Z7, Z10, Z7 \
	VMINPS    Z1, Z11, Z1 \
	VMINPS    Z3, Z11, Z3 \
	VMINPS    Z5, Z11, Z5 \
	VMINPS    Z7, Z11, Z7

#define HARD4XT \
	VMULPS    Z1, Z0, Z1 \
	VMULPS    Z3, Z2, Z3 \
	VMULPS    Z5, Z4, Z5 \
	VMULPS    Z7, Z6, Z7

#define HARD4STORE \
	VMOVUPS   Z1, 0(DI)(AX*4) \
	VMOVUPS   Z3, 64(DI)(AX*4) \
	VMOVUPS   Z5, 128(DI)(AX*4) \
	VMOVUPS   Z7, 192(DI)(AX*4)

// func convHardAVX512(dst []float32, a, b, lo, hi, d float32, mode int)
//
// convHardAVX2 on 16 values a step, the last len(dst) % 16 under the
// mask K1, x := dst[i]:
//
//	t := x·a + b                     (a product, then a sum: no fused multiply-add)
//	if lo > t { t = lo }             // VMAXPS t, lo
//	if hi < t { t = hi }             // VMINPS t, hi
//	dst[i] = t, x·t, x·t/d or x·t·d  (mode 0, 1, 2, 3)
//
// Four steps an iteration while 64 values are left, each form in a loop
// of its own, then a step at a time (the form chosen each step): the
// same operations on every value either way.
//
// Register contract: DI dst, CX len(dst), AX the index, R8 mode, R10 the
// step's end, Z8..Z12 a, b, lo, hi, d; K1 all lanes but in the tail.
TEXT ·convHardAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	VBROADCASTSS a+24(FP), Z8
	VBROADCASTSS b+28(FP), Z9
	VBROADCASTSS lo+32(FP), Z10
	VBROADCASTSS hi+36(FP), Z11
	VBROADCASTSS d+40(FP), Z12
	MOVQ         mode+48(FP), R8
	MOVL         $0xFFFF, R10
	KMOVW        R10, K1
	XORQ         AX, AX
	CMPQ         R8, $1
	JLT          hard64t
	JEQ          hard64xt
	CMPQ         R8, $2
	JEQ          hard64div
	JMP          hard64mul

hard64t: // four steps an iteration, the form chosen once
	LEAQ      64(AX), R10
	CMPQ      R10, CX
	JGT       hard16
	HARD4T
	HARD4STORE
	MOVQ      R10, AX
	JMP       hard64t

hard64xt: // four steps an iteration, the form chosen once
	LEAQ      64(AX), R10
	CMPQ      R10, CX
	JGT       hard16
	HARD4T
	HARD4XT
	HARD4STORE
	MOVQ      R10, AX
	JMP       hard64xt

hard64div: // four steps an iteration, the form chosen once
	LEAQ      64(AX), R10
	CMPQ      R10, CX
	JGT       hard16
	HARD4T
	HARD4XT
	VDIVPS    Z12, Z1, Z1
	VDIVPS    Z12, Z3, Z3
	VDIVPS    Z12, Z5, Z5
	VDIVPS    Z12, Z7, Z7
	HARD4STORE
	MOVQ      R10, AX
	JMP       hard64div

hard64mul: // four steps an iteration, the form chosen once
	LEAQ      64(AX), R10
	CMPQ      R10, CX
	JGT       hard16
	HARD4T
	HARD4XT
	VMULPS    Z12, Z1, Z1
	VMULPS    Z12, Z3, Z3
	VMULPS    Z12, Z5, Z5
	VMULPS    Z12, Z7, Z7
	HARD4STORE
	MOVQ      R10, AX
	JMP       hard64mul

hard16:
	LEAQ      16(AX), R10
	CMPQ      R10, CX
	JLE       hardstep
	MOVQ      CX, R10            // the tail: its lanes under K1
	SUBQ      AX, R10
	JZ        harddone
	MOVQ      CX, R11
	MOVQ      R10, CX
	MOVL      $1, R10
	SHLL      CX, R10
	DECL      R10
	KMOVW     R10, K1
	MOVQ      R11, CX
	MOVQ      CX, R10

hardstep:
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	VMULPS    Z8, Z0, Z1
	VADDPS    Z9, Z1, Z1
	VMAXPS    Z1, Z10, Z1        // lo > t ? lo : t
	VMINPS    Z1, Z11, Z1        // hi < t ? hi : t
	CMPQ      R8, $0
	JEQ       hardstore
	VMULPS    Z1, Z0, Z1         // x·t
	CMPQ      R8, $2
	JLT       hardstore
	JGT       hardmul
	VDIVPS    Z12, Z1, Z1        // x·t/d
	JMP       hardstore
hardmul:
	VMULPS    Z12, Z1, Z1        // x·t·d
hardstore:
	VMOVUPS   Z1, K1, (DI)(AX*4)
	MOVQ      R10, AX
	JMP       hard16

harddone:
	VZEROUPPER
	RET
