//go:build gc && !purego

#include "textflag.h"

#define V_FADD2D(d, n, m) WORD $(0x4e60d400|((m)<<16)|((n)<<5)|(d)) // FADD Vd.2D: n + m
#define V_FCVTL(d, n) WORD $(0x0e617800|((n)<<5)|(d))             // FCVTL Vd.2D, Vn.2S: lanes 0-1 widened

// ROW adds the row's two values at R1, widened to float64 through V16,
// to the partial sum V(acc), and moves R1 to the next row (R3 bytes on).
#define ROW(acc) \
	FMOVD (R1), F16 \
	V_FCVTL(16, 16) \
	V_FADD2D(acc, acc, 16) \
	ADD   R3, R1

// func columnPoolSums2NEON(dst *[2]float64, x *float32, rows, ld int)
//
// kernels.ColumnPoolSums for two channels: V0-V15 hold the partial sums
// of rows 0-15 mod 16 (a row's two channels widened to float64),
// combined as kernels.PoolSum combines its lanes, then the rows after the
// last whole sixteen added in order.
TEXT ·columnPoolSums2NEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD rows+16(FP), R2
	MOVD ld+24(FP), R3
	LSL  $2, R3
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	LSR  $4, R2, R4                // whole sixteens
	AND  $15, R2                   // rows after them
	CBZ  R4, combine2

sixteen2:
	ROW(0)
	ROW(1)
	ROW(2)
	ROW(3)
	ROW(4)
	ROW(5)
	ROW(6)
	ROW(7)
	ROW(8)
	ROW(9)
	ROW(10)
	ROW(11)
	ROW(12)
	ROW(13)
	ROW(14)
	ROW(15)
	SUB  $1, R4
	CBNZ R4, sixteen2

combine2:
	V_FADD2D(0, 0, 8) // b_j = s_j + s_j+8
	V_FADD2D(1, 1, 9)
	V_FADD2D(2, 2, 10)
	V_FADD2D(3, 3, 11)
	V_FADD2D(4, 4, 12)
	V_FADD2D(5, 5, 13)
	V_FADD2D(6, 6, 14)
	V_FADD2D(7, 7, 15)
	V_FADD2D(0, 0, 4) // a_j = b_j + b_j+4
	V_FADD2D(1, 1, 5)
	V_FADD2D(2, 2, 6)
	V_FADD2D(3, 3, 7)
	V_FADD2D(0, 0, 1) // (a0 + a1) + (a2 + a3)
	V_FADD2D(2, 2, 3)
	V_FADD2D(0, 0, 2)

tail2:
	CBZ R2, done2
	ROW(0)
	SUB $1, R2
	B   tail2

done2:
	VST1 [V0.D2], (R0)
	RET
