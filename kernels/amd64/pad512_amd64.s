//go:build gc && !purego

#include "textflag.h"

// func padChannelsAVX512(dst, src *float32, n, ch, cs, full, tail, zeros int)
//
// Per pixel: full 16-lane moves of the channels, then (tail a mask of
// the last ch%16 lanes, or 0) one masked load that zeroes the lanes past
// ch, stored whole, then zeros vectors of zeros: 16·(full + (tail != 0)
// + zeros) = cs. Masked-off lanes of a load are not read, so the last
// pixel's load stops where src does.
TEXT ·padChannelsAVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ ch+24(FP), R8
	SHLQ $2, R8
	MOVQ cs+32(FP), R9
	SHLQ $2, R9
	MOVQ full+40(FP), R10
	MOVQ tail+48(FP), AX
	KMOVW AX, K1
	MOVQ zeros+56(FP), R11
	VPXORD Z1, Z1, Z1

pixel:
	XORQ BX, BX
	MOVQ R10, DX
	TESTQ DX, DX
	JZ    tail

vec:
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS Z0, (DI)(BX*1)
	ADDQ    $64, BX
	DECQ    DX
	JNZ     vec

tail:
	TESTQ AX, AX
	JZ    zero
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS   Z0, (DI)(BX*1)
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
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ  pixel
	VZEROUPPER
	RET

// func copyBlockAVX512(dst, src *float32, rows, ldd, lds, full, tail int)
//
// Per row: full 16-lane moves, then (tail a mask of the last cols%16
// lanes, or 0) one masked load and one masked store, which writes
// nothing past the row's values.
TEXT ·copyBlockAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ ldd+24(FP), R8
	SHLQ $2, R8
	MOVQ lds+32(FP), R9
	SHLQ $2, R9
	MOVQ full+40(FP), R10
	MOVQ tail+48(FP), AX
	KMOVW AX, K1

npixel:
	XORQ  BX, BX
	MOVQ  R10, DX
	TESTQ DX, DX
	JZ    ntail

nvec:
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS Z0, (DI)(BX*1)
	ADDQ    $64, BX
	DECQ    DX
	JNZ     nvec

ntail:
	TESTQ     AX, AX
	JZ        nnext
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS   Z0, K1, (DI)(BX*1)

nnext:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  npixel
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
