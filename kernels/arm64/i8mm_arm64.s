//go:build gc && !purego

#include "textflag.h"

// I8MM kernels: USMMLA multiplies a 2×8 matrix of unsigned bytes (two rows
// of activations, 8 k each) by an 8×2 matrix of signed bytes (two columns
// of weights) into a 2×2 int32 tile, 32 multiply-adds per instruction, on
// the raw activations u (no offset: QOffset is 0 for these tables).
//
// Packed panels hold 4 k per column per group; ZIP1/ZIP2 (.4S) of groups g
// and g+1 give each column's 8 consecutive k, two columns per register.

// qtile4i8mm<> accumulates four rows × 16 columns with USMMLA.
// In:  R0, R1, R9, R10 = rows 0-3, R2 = packed panel, R3 = groups of 4 k.
// Out: V(8P+Q) = rows 2P, 2P+1 × columns 2Q, 2Q+1 as [r0c0 r0c1 r1c0 r1c1].
// Clobbers R0-R3, R9, R10, V16-V29.
TEXT qtile4i8mm<>(SB), NOSPLIT|NOFRAME, $0-0
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
	CMP $2, R3
	BLT m4tail
m4loop: // two groups (8 k) per iteration
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16] // group g
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16] // group g+1
	FMOVD.P 8(R0), F24 // row 0: u[8t:8t+8]
	FMOVD.P 8(R1), F28 // row 1
	FMOVD.P 8(R9), F25 // row 2
	FMOVD.P 8(R10), F29 // row 3
	WORD $0x4edc3b18 // ZIP1 V24.2D, V24.2D, V28.2D (rows 0, 1: 8 k each)
	WORD $0x4edd3b39 // ZIP1 V25.2D, V25.2D, V29.2D (rows 2, 3)
	WORD $0x4e943a1a // ZIP1 V26.4S, V16.4S, V20.4S (columns 0, 1: 8 k each)
	WORD $0x4e947a1b // ZIP2 V27.4S, V16.4S, V20.4S (columns 2, 3)
	WORD $0x4e9aaf00 // USMMLA V0.4S, V24.16B, V26.16B
	WORD $0x4e9baf01 // USMMLA V1.4S, V24.16B, V27.16B
	WORD $0x4e9aaf28 // USMMLA V8.4S, V25.16B, V26.16B
	WORD $0x4e9baf29 // USMMLA V9.4S, V25.16B, V27.16B
	WORD $0x4e953a3a // ZIP1 V26.4S, V17.4S, V21.4S (columns 4, 5: 8 k each)
	WORD $0x4e957a3b // ZIP2 V27.4S, V17.4S, V21.4S (columns 6, 7)
	WORD $0x4e9aaf02 // USMMLA V2.4S, V24.16B, V26.16B
	WORD $0x4e9baf03 // USMMLA V3.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2a // USMMLA V10.4S, V25.16B, V26.16B
	WORD $0x4e9baf2b // USMMLA V11.4S, V25.16B, V27.16B
	WORD $0x4e963a5a // ZIP1 V26.4S, V18.4S, V22.4S (columns 8, 9: 8 k each)
	WORD $0x4e967a5b // ZIP2 V27.4S, V18.4S, V22.4S (columns 10, 11)
	WORD $0x4e9aaf04 // USMMLA V4.4S, V24.16B, V26.16B
	WORD $0x4e9baf05 // USMMLA V5.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2c // USMMLA V12.4S, V25.16B, V26.16B
	WORD $0x4e9baf2d // USMMLA V13.4S, V25.16B, V27.16B
	WORD $0x4e973a7a // ZIP1 V26.4S, V19.4S, V23.4S (columns 12, 13: 8 k each)
	WORD $0x4e977a7b // ZIP2 V27.4S, V19.4S, V23.4S (columns 14, 15)
	WORD $0x4e9aaf06 // USMMLA V6.4S, V24.16B, V26.16B
	WORD $0x4e9baf07 // USMMLA V7.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2e // USMMLA V14.4S, V25.16B, V26.16B
	WORD $0x4e9baf2f // USMMLA V15.4S, V25.16B, V27.16B
	SUB $2, R3
	CMP $2, R3
	BGE m4loop
m4tail: // an odd last group: group g+1 and the rows' upper 4 k are zero
	CBZ R3, m4done
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	FMOVS.P 4(R0), F24
	FMOVS.P 4(R1), F28
	FMOVS.P 4(R9), F25
	FMOVS.P 4(R10), F29
	WORD $0x4edc3b18 // ZIP1 V24.2D, V24.2D, V28.2D (rows 0, 1: 8 k each)
	WORD $0x4edd3b39 // ZIP1 V25.2D, V25.2D, V29.2D (rows 2, 3)
	WORD $0x4e943a1a // ZIP1 V26.4S, V16.4S, V20.4S (columns 0, 1: 8 k each)
	WORD $0x4e947a1b // ZIP2 V27.4S, V16.4S, V20.4S (columns 2, 3)
	WORD $0x4e9aaf00 // USMMLA V0.4S, V24.16B, V26.16B
	WORD $0x4e9baf01 // USMMLA V1.4S, V24.16B, V27.16B
	WORD $0x4e9aaf28 // USMMLA V8.4S, V25.16B, V26.16B
	WORD $0x4e9baf29 // USMMLA V9.4S, V25.16B, V27.16B
	WORD $0x4e953a3a // ZIP1 V26.4S, V17.4S, V21.4S (columns 4, 5: 8 k each)
	WORD $0x4e957a3b // ZIP2 V27.4S, V17.4S, V21.4S (columns 6, 7)
	WORD $0x4e9aaf02 // USMMLA V2.4S, V24.16B, V26.16B
	WORD $0x4e9baf03 // USMMLA V3.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2a // USMMLA V10.4S, V25.16B, V26.16B
	WORD $0x4e9baf2b // USMMLA V11.4S, V25.16B, V27.16B
	WORD $0x4e963a5a // ZIP1 V26.4S, V18.4S, V22.4S (columns 8, 9: 8 k each)
	WORD $0x4e967a5b // ZIP2 V27.4S, V18.4S, V22.4S (columns 10, 11)
	WORD $0x4e9aaf04 // USMMLA V4.4S, V24.16B, V26.16B
	WORD $0x4e9baf05 // USMMLA V5.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2c // USMMLA V12.4S, V25.16B, V26.16B
	WORD $0x4e9baf2d // USMMLA V13.4S, V25.16B, V27.16B
	WORD $0x4e973a7a // ZIP1 V26.4S, V19.4S, V23.4S (columns 12, 13: 8 k each)
	WORD $0x4e977a7b // ZIP2 V27.4S, V19.4S, V23.4S (columns 14, 15)
	WORD $0x4e9aaf06 // USMMLA V6.4S, V24.16B, V26.16B
	WORD $0x4e9baf07 // USMMLA V7.4S, V24.16B, V27.16B
	WORD $0x4e9aaf2e // USMMLA V14.4S, V25.16B, V26.16B
	WORD $0x4e9baf2f // USMMLA V15.4S, V25.16B, V27.16B
m4done:
	RET

// func qTile4I8MM(u []uint8, ldu int, bp []int8, kq int, acc []int32)
TEXT ·qTile4I8MM(SB), NOSPLIT, $0-88
	MOVD u_base+0(FP), R0
	MOVD ldu+24(FP), R5
	MOVD bp_base+32(FP), R2
	MOVD kq+56(FP), R3
	MOVD acc_base+64(FP), R8
	ADD  R5, R0, R1
	ADD  R5, R1, R9
	ADD  R5, R9, R10
	CALL qtile4i8mm<>(SB)
	WORD $0x4ec13810 // ZIP1 V16.2D, V0.2D, V1.2D (row 0, columns 0-3)
	WORD $0x4ec33851 // ZIP1 V17.2D, V2.2D, V3.2D (row 0, columns 4-7)
	WORD $0x4ec53892 // ZIP1 V18.2D, V4.2D, V5.2D (row 0, columns 8-11)
	WORD $0x4ec738d3 // ZIP1 V19.2D, V6.2D, V7.2D (row 0, columns 12-15)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	WORD $0x4ec17810 // ZIP2 V16.2D, V0.2D, V1.2D (row 1, columns 0-3)
	WORD $0x4ec37851 // ZIP2 V17.2D, V2.2D, V3.2D (row 1, columns 4-7)
	WORD $0x4ec57892 // ZIP2 V18.2D, V4.2D, V5.2D (row 1, columns 8-11)
	WORD $0x4ec778d3 // ZIP2 V19.2D, V6.2D, V7.2D (row 1, columns 12-15)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	WORD $0x4ec93910 // ZIP1 V16.2D, V8.2D, V9.2D (row 2, columns 0-3)
	WORD $0x4ecb3951 // ZIP1 V17.2D, V10.2D, V11.2D (row 2, columns 4-7)
	WORD $0x4ecd3992 // ZIP1 V18.2D, V12.2D, V13.2D (row 2, columns 8-11)
	WORD $0x4ecf39d3 // ZIP1 V19.2D, V14.2D, V15.2D (row 2, columns 12-15)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	WORD $0x4ec97910 // ZIP2 V16.2D, V8.2D, V9.2D (row 3, columns 0-3)
	WORD $0x4ecb7951 // ZIP2 V17.2D, V10.2D, V11.2D (row 3, columns 4-7)
	WORD $0x4ecd7992 // ZIP2 V18.2D, V12.2D, V13.2D (row 3, columns 8-11)
	WORD $0x4ecf79d3 // ZIP2 V19.2D, V14.2D, V15.2D (row 3, columns 12-15)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	RET

// func qTile1I8MM(u []uint8, bp []int8, kq int, acc []int32)
TEXT ·qTile1I8MM(SB), NOSPLIT, $0-80
	MOVD u_base+0(FP), R0
	MOVD R0, R1               // rows 1-3 repeat row 0 and are discarded
	MOVD R0, R9
	MOVD R0, R10
	MOVD bp_base+24(FP), R2
	MOVD kq+48(FP), R3
	MOVD acc_base+56(FP), R8
	CALL qtile4i8mm<>(SB)
	WORD $0x4ec13810 // ZIP1 V16.2D, V0.2D, V1.2D (row 0, columns 0-3)
	WORD $0x4ec33851 // ZIP1 V17.2D, V2.2D, V3.2D (row 0, columns 4-7)
	WORD $0x4ec53892 // ZIP1 V18.2D, V4.2D, V5.2D (row 0, columns 8-11)
	WORD $0x4ec738d3 // ZIP1 V19.2D, V6.2D, V7.2D (row 0, columns 12-15)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	RET
