//go:build gc && !purego

#include "textflag.h"

// func touchRows(p *float32, ld, rows, bytes int)
//
// One 4-byte load a 64-byte line, its value dropped: the loads are
// independent, so the core keeps many misses in flight.
TEXT ·touchRows(SB), NOSPLIT, $0-32
	MOVD p+0(FP), R0
	MOVD ld+8(FP), R1
	LSL  $2, R1, R1
	MOVD rows+16(FP), R2
	MOVD bytes+24(FP), R3

row:
	MOVD $0, R4

line:
	MOVWU (R0)(R4), R5
	ADD   $64, R4, R4
	CMP   R3, R4
	BLT   line
	ADD   R1, R0, R0
	SUBS  $1, R2, R2
	BNE   row
	RET
