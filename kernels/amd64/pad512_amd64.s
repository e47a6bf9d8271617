//go:build gc && !purego

#include "textflag.h"

// func moveRowsAVX512(dst, src *float32, rows, ldd, lds, full, tail, store, zeros int)
//
// Per row: full 16-lane moves; then, when tail (a mask of the last lanes
// to read) is not 0, one load of those lanes that zeroes the others,
// stored under the mask store (tail itself: nothing past the row's
// values; all ones: a whole vector, its zeros widening the row); then
// zeros vectors of zeros. Masked-off lanes of a load are not read, so the
// last row's load stops where src does.
TEXT ·moveRowsAVX512(SB), NOSPLIT, $0-72
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   rows+16(FP), CX
	MOVQ   ldd+24(FP), R8
	SHLQ   $2, R8
	MOVQ   lds+32(FP), R9
	SHLQ   $2, R9
	MOVQ   full+40(FP), R10
	MOVQ   tail+48(FP), AX
	KMOVW  AX, K1
	MOVQ   store+56(FP), DX
	KMOVW  DX, K2
	MOVQ   zeros+64(FP), R11
	VPXORD Z1, Z1, Z1

row:
	XORQ  BX, BX
	MOVQ  R10, DX
	TESTQ DX, DX
	JZ    tail

vec:
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS Z0, (DI)(BX*1)
	ADDQ    $64, BX
	DECQ    DX
	JNZ     vec

tail:
	TESTQ     AX, AX
	JZ        zero
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS   Z0, K2, (DI)(BX*1)
	ADDQ      $64, BX

zero:
	MOVQ  R11, DX
	TESTQ DX, DX
	JZ    next

zloop:
	VMOVUPS Z1, (DI)(BX*1)
	ADDQ    $64, BX
	DECQ    DX
	JNZ     zloop

next:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  row
	VZEROUPPER
	RET

// The even lanes of two vectors, in order: VPERMT2PS's indexes (16-31
// the second vector's).
DATA evenLanes<>+0(SB)/4, $0
DATA evenLanes<>+4(SB)/4, $2
DATA evenLanes<>+8(SB)/4, $4
DATA evenLanes<>+12(SB)/4, $6
DATA evenLanes<>+16(SB)/4, $8
DATA evenLanes<>+20(SB)/4, $10
DATA evenLanes<>+24(SB)/4, $12
DATA evenLanes<>+28(SB)/4, $14
DATA evenLanes<>+32(SB)/4, $16
DATA evenLanes<>+36(SB)/4, $18
DATA evenLanes<>+40(SB)/4, $20
DATA evenLanes<>+44(SB)/4, $22
DATA evenLanes<>+48(SB)/4, $24
DATA evenLanes<>+52(SB)/4, $26
DATA evenLanes<>+56(SB)/4, $28
DATA evenLanes<>+60(SB)/4, $30
GLOBL evenLanes<>(SB), RODATA|NOPTR, $64

// func everyOtherAVX512(dst, src *float32, blocks int)
//
// blocks times: 32 values of src, their 16 even ones to dst.
TEXT ·everyOtherAVX512(SB), NOSPLIT, $0-24
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	MOVQ      blocks+16(FP), CX
	VMOVDQU32 evenLanes<>(SB), Z2

eloop:
	VMOVUPS   (SI), Z0
	VMOVUPS   64(SI), Z1
	VPERMT2PS Z1, Z2, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       eloop
	VZEROUPPER
	RET
