//go:build gc && !purego

#include "textflag.h"

// func touchRows(p *float32, ld, rows, bytes int)
//
// One 4-byte load a 64-byte line, its value dropped: the loads are
// independent, so the core keeps many misses in flight.
TEXT ·touchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), DI
	MOVQ ld+8(FP), SI
	SHLQ $2, SI
	MOVQ rows+16(FP), CX
	MOVQ bytes+24(FP), DX

row:
	XORQ AX, AX

line:
	MOVL (DI)(AX*1), R8
	ADDQ $64, AX
	CMPQ AX, DX
	JLT  line
	ADDQ SI, DI
	DECQ CX
	JNZ  row
	RET
