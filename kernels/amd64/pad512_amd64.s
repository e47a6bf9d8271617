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

// func narrowChannelsAVX512(dst, src *float32, n, ch, cs, full, tail int)
//
// Per pixel: full 16-lane moves of the channels, then (tail a mask of
// the last ch%16 lanes, or 0) one masked load and one masked store, which
// writes none of the next pixel's values (nor past the last pixel).
TEXT ·narrowChannelsAVX512(SB), NOSPLIT, $0-56
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
