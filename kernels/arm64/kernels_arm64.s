//go:build gc && !purego

#include "textflag.h"

// QUANTIZE_SETUP loads the arguments of quantizeU8NEON and
// quantizeDivU8NEON (x, f, zp, lo, hi, u): R0 x, R3 len(x), V0 f, V1 zp,
// V2 lo, V3 hi in every lane, R8 u.
#define QUANTIZE_SETUP \
	MOVD  x_base+0(FP), R0 \
	MOVD  x_len+8(FP), R3 \
	FMOVS f+24(FP), F0 \
	VDUP  V0.S[0], V0.S4 \
	MOVW  zp+28(FP), R4 \
	VDUP  R4, V1.S4 \
	FMOVS lo+32(FP), F2 \
	VDUP  V2.S[0], V2.S4 \
	FMOVS hi+36(FP), F3 \
	VDUP  V3.S[0], V3.S4 \
	MOVD  u_base+40(FP), R8

// QUANTIZE8(op) quantizes 8 values of x into u, both pointers moving on:
// each value goes through op with f (op the base encoding of FMUL or
// FDIV .4S, rounded once), is clamped to [lo, hi], rounded half to even
// and given zp.
#define QUANTIZE8(op) \
	VLD1.P 32(R0), [V4.S4, V5.S4] \
	WORD   $((op)|(4<<5)|4)       /* V4 = V4 op V0 */ \
	WORD   $0x4e22f484            /* FMAX V4.4S, V4.4S, V2.4S */ \
	WORD   $0x4ea3f484            /* FMIN V4.4S, V4.4S, V3.4S */ \
	WORD   $0x4e21a884            /* FCVTNS V4.4S, V4.4S */ \
	VADD   V1.S4, V4.S4, V4.S4 \
	WORD   $((op)|(5<<5)|5)       /* V5 = V5 op V0 */ \
	WORD   $0x4e22f4a5            /* FMAX V5.4S, V5.4S, V2.4S */ \
	WORD   $0x4ea3f4a5            /* FMIN V5.4S, V5.4S, V3.4S */ \
	WORD   $0x4e21a8a5            /* FCVTNS V5.4S, V5.4S */ \
	VADD   V1.S4, V5.S4, V5.S4 \
	WORD   $0x0e612886            /* XTN V6.4H, V4.4S */ \
	WORD   $0x4e6128a6            /* XTN2 V6.8H, V5.4S */ \
	WORD   $0x0e2128c7            /* XTN V7.8B, V6.8H */ \
	VST1.P [V7.B8], 8(R8)

// NEON kernels. Go's assembler has no mnemonics for SMULL, SADALP, SDOT and
// the vector float arithmetic used here; those go in as WORD with the
// instruction in the comment.
//
// Activations arrive as unsigned bytes u in [0, 128]; the tiles work on
// s = u XOR 0x80 = u - 128 (a signed byte), so they compute Σ (u-128)·b.
// The table's QOffset (128) tells the caller to add 128·colsum back.

// qtile2smull<> accumulates two rows × 16 columns with widening multiplies.
// In:  R0, R1 = the two rows, R2 = packed panel, R3 = groups of 4 k,
//      V31 = 0x80 in every byte.
// Out: V0, V2, V4, V6 = row a, columns 0-3, 4-7, 8-11, 12-15 (int32);
//      V8, V10, V12, V14 = row b. Advances R0-R2; clobbers R3, V1-V23.
TEXT qtile2smull<>(SB), NOSPLIT|NOFRAME, $0-0
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
	CBZ R3, s2done
s2loop:
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16] // the panel's 16 columns × 4 k
	VLD1R.P 4(R0), [V20.S4]  // row a: u[k:k+4] in every lane
	VLD1R.P 4(R1), [V21.S4]  // row b
	VEOR V31.B16, V20.B16, V20.B16 // s = u - 128
	VEOR V31.B16, V21.B16, V21.B16
	WORD $0x0e30c296 // SMULL V22.8H, V20.8B, V16.8B   (columns 0-1)
	WORD $0x4e606ac0 // SADALP V0.4S, V22.8H
	WORD $0x4e30c297 // SMULL2 V23.8H, V20.16B, V16.16B (columns 2-3)
	WORD $0x4e606ae1 // SADALP V1.4S, V23.8H
	WORD $0x0e30c2b6 // SMULL V22.8H, V21.8B, V16.8B   (columns 0-1)
	WORD $0x4e606ac8 // SADALP V8.4S, V22.8H
	WORD $0x4e30c2b7 // SMULL2 V23.8H, V21.16B, V16.16B (columns 2-3)
	WORD $0x4e606ae9 // SADALP V9.4S, V23.8H
	WORD $0x0e31c296 // SMULL V22.8H, V20.8B, V17.8B   (columns 4-5)
	WORD $0x4e606ac2 // SADALP V2.4S, V22.8H
	WORD $0x4e31c297 // SMULL2 V23.8H, V20.16B, V17.16B (columns 6-7)
	WORD $0x4e606ae3 // SADALP V3.4S, V23.8H
	WORD $0x0e31c2b6 // SMULL V22.8H, V21.8B, V17.8B   (columns 4-5)
	WORD $0x4e606aca // SADALP V10.4S, V22.8H
	WORD $0x4e31c2b7 // SMULL2 V23.8H, V21.16B, V17.16B (columns 6-7)
	WORD $0x4e606aeb // SADALP V11.4S, V23.8H
	WORD $0x0e32c296 // SMULL V22.8H, V20.8B, V18.8B   (columns 8-9)
	WORD $0x4e606ac4 // SADALP V4.4S, V22.8H
	WORD $0x4e32c297 // SMULL2 V23.8H, V20.16B, V18.16B (columns 10-11)
	WORD $0x4e606ae5 // SADALP V5.4S, V23.8H
	WORD $0x0e32c2b6 // SMULL V22.8H, V21.8B, V18.8B   (columns 8-9)
	WORD $0x4e606acc // SADALP V12.4S, V22.8H
	WORD $0x4e32c2b7 // SMULL2 V23.8H, V21.16B, V18.16B (columns 10-11)
	WORD $0x4e606aed // SADALP V13.4S, V23.8H
	WORD $0x0e33c296 // SMULL V22.8H, V20.8B, V19.8B   (columns 12-13)
	WORD $0x4e606ac6 // SADALP V6.4S, V22.8H
	WORD $0x4e33c297 // SMULL2 V23.8H, V20.16B, V19.16B (columns 14-15)
	WORD $0x4e606ae7 // SADALP V7.4S, V23.8H
	WORD $0x0e33c2b6 // SMULL V22.8H, V21.8B, V19.8B   (columns 12-13)
	WORD $0x4e606ace // SADALP V14.4S, V22.8H
	WORD $0x4e33c2b7 // SMULL2 V23.8H, V21.16B, V19.16B (columns 14-15)
	WORD $0x4e606aef // SADALP V15.4S, V23.8H
	SUB $1, R3
	CBNZ R3, s2loop
s2done:
	// fold the pair sums: [c0 c0 c1 c1] + [c2 c2 c3 c3] -> [c0 c1 c2 c3]
	VADDP V1.S4, V0.S4, V0.S4
	VADDP V3.S4, V2.S4, V2.S4
	VADDP V5.S4, V4.S4, V4.S4
	VADDP V7.S4, V6.S4, V6.S4
	VADDP V9.S4, V8.S4, V8.S4
	VADDP V11.S4, V10.S4, V10.S4
	VADDP V13.S4, V12.S4, V12.S4
	VADDP V15.S4, V14.S4, V14.S4
	RET

// func qTile4SMULL(u []uint8, ldu int, bp []int8, kq int, acc []int32)
TEXT ·qTile4SMULL(SB), NOSPLIT, $0-88
	MOVD u_base+0(FP), R4
	MOVD ldu+24(FP), R5
	MOVD bp_base+32(FP), R6
	MOVD kq+56(FP), R7
	MOVD acc_base+64(FP), R8
	VMOVI $128, V31.B16
	// rows 0 and 1
	MOVD R4, R0
	ADD  R5, R4, R1
	MOVD R6, R2
	MOVD R7, R3
	CALL qtile2smull<>(SB)
	VST1.P [V0.S4], 16(R8)
	VST1.P [V2.S4], 16(R8)
	VST1.P [V4.S4], 16(R8)
	VST1.P [V6.S4], 16(R8)
	VST1.P [V8.S4], 16(R8)
	VST1.P [V10.S4], 16(R8)
	VST1.P [V12.S4], 16(R8)
	VST1.P [V14.S4], 16(R8)
	// rows 2 and 3
	ADD  R5, R4, R0
	ADD  R5, R0, R0
	ADD  R5, R0, R1
	MOVD R6, R2
	MOVD R7, R3
	CALL qtile2smull<>(SB)
	VST1.P [V0.S4], 16(R8)
	VST1.P [V2.S4], 16(R8)
	VST1.P [V4.S4], 16(R8)
	VST1.P [V6.S4], 16(R8)
	VST1.P [V8.S4], 16(R8)
	VST1.P [V10.S4], 16(R8)
	VST1.P [V12.S4], 16(R8)
	VST1.P [V14.S4], 16(R8)
	RET

// func qTile1SMULL(u []uint8, bp []int8, kq int, acc []int32)
TEXT ·qTile1SMULL(SB), NOSPLIT, $0-80
	MOVD u_base+0(FP), R0
	MOVD R0, R1               // the same row twice; row b is discarded
	MOVD bp_base+24(FP), R2
	MOVD kq+48(FP), R3
	MOVD acc_base+56(FP), R8
	VMOVI $128, V31.B16
	CALL qtile2smull<>(SB)
	VST1.P [V0.S4], 16(R8)
	VST1.P [V2.S4], 16(R8)
	VST1.P [V4.S4], 16(R8)
	VST1.P [V6.S4], 16(R8)
	RET

// qtile4sdot<> accumulates four rows × 16 columns with SDOT.
// In:  R0, R1, R9, R10 = rows 0-3, R2 = packed panel, R3 = groups of 4 k,
//      V31 = 0x80 in every byte.
// Out: V(4r+j) = row r, columns 4j..4j+3 (int32). Clobbers R0-R3, R9, R10, V16-V23.
TEXT qtile4sdot<>(SB), NOSPLIT|NOFRAME, $0-0
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
	CBZ R3, d4done
d4loop:
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16] // the panel's 16 columns × 4 k
	VLD1R.P 4(R0), [V20.S4] // row 0: u[k:k+4] in every lane
	VLD1R.P 4(R1), [V21.S4] // row 1: u[k:k+4] in every lane
	VLD1R.P 4(R9), [V22.S4] // row 2: u[k:k+4] in every lane
	VLD1R.P 4(R10), [V23.S4] // row 3: u[k:k+4] in every lane
	VEOR V31.B16, V20.B16, V20.B16
	VEOR V31.B16, V21.B16, V21.B16
	VEOR V31.B16, V22.B16, V22.B16
	VEOR V31.B16, V23.B16, V23.B16
	WORD $0x4e909680 // SDOT V0.4S, V20.16B, V16.16B (row 0, columns 0-3)
	WORD $0x4e919681 // SDOT V1.4S, V20.16B, V17.16B (row 0, columns 4-7)
	WORD $0x4e929682 // SDOT V2.4S, V20.16B, V18.16B (row 0, columns 8-11)
	WORD $0x4e939683 // SDOT V3.4S, V20.16B, V19.16B (row 0, columns 12-15)
	WORD $0x4e9096a4 // SDOT V4.4S, V21.16B, V16.16B (row 1, columns 0-3)
	WORD $0x4e9196a5 // SDOT V5.4S, V21.16B, V17.16B (row 1, columns 4-7)
	WORD $0x4e9296a6 // SDOT V6.4S, V21.16B, V18.16B (row 1, columns 8-11)
	WORD $0x4e9396a7 // SDOT V7.4S, V21.16B, V19.16B (row 1, columns 12-15)
	WORD $0x4e9096c8 // SDOT V8.4S, V22.16B, V16.16B (row 2, columns 0-3)
	WORD $0x4e9196c9 // SDOT V9.4S, V22.16B, V17.16B (row 2, columns 4-7)
	WORD $0x4e9296ca // SDOT V10.4S, V22.16B, V18.16B (row 2, columns 8-11)
	WORD $0x4e9396cb // SDOT V11.4S, V22.16B, V19.16B (row 2, columns 12-15)
	WORD $0x4e9096ec // SDOT V12.4S, V23.16B, V16.16B (row 3, columns 0-3)
	WORD $0x4e9196ed // SDOT V13.4S, V23.16B, V17.16B (row 3, columns 4-7)
	WORD $0x4e9296ee // SDOT V14.4S, V23.16B, V18.16B (row 3, columns 8-11)
	WORD $0x4e9396ef // SDOT V15.4S, V23.16B, V19.16B (row 3, columns 12-15)
	SUB $1, R3
	CBNZ R3, d4loop
d4done:
	RET

// func qTile4SDOT(u []uint8, ldu int, bp []int8, kq int, acc []int32)
TEXT ·qTile4SDOT(SB), NOSPLIT, $0-88
	MOVD u_base+0(FP), R0
	MOVD ldu+24(FP), R5
	MOVD bp_base+32(FP), R2
	MOVD kq+56(FP), R3
	MOVD acc_base+64(FP), R8
	ADD  R5, R0, R1
	ADD  R5, R1, R9
	ADD  R5, R9, R10
	VMOVI $128, V31.B16
	CALL qtile4sdot<>(SB)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R8)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R8)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R8)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R8)
	RET

// func qTile1SDOT(u []uint8, bp []int8, kq int, acc []int32)
TEXT ·qTile1SDOT(SB), NOSPLIT, $0-80
	MOVD u_base+0(FP), R0
	MOVD R0, R1               // rows 1-3 repeat row 0 and are discarded
	MOVD R0, R9
	MOVD R0, R10
	MOVD bp_base+24(FP), R2
	MOVD kq+48(FP), R3
	MOVD acc_base+56(FP), R8
	VMOVI $128, V31.B16
	CALL qtile4sdot<>(SB)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R8)
	RET

// Float tiles: V(4r+j) accumulates C[r][4j:4j+4]; V16-V19 hold B[k][0:16];
// V20 is A[r][k] in every lane (VLD1R).

// func fTile4NEON(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load int)
//
// With load != 0 the sums start from c's values (a product split along K).
TEXT ·fTile4NEON(SB), NOSPLIT, $0-104
	MOVD a_base+0(FP), R0
	MOVD lda+24(FP), R5
	LSL  $2, R5, R5
	MOVD bp_base+32(FP), R2
	MOVD k+56(FP), R3
	MOVD c_base+64(FP), R8
	MOVD ldc+88(FP), R6
	LSL  $2, R6, R6
	ADD  R5, R0, R1
	ADD  R5, R1, R9
	ADD  R5, R9, R10
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
	MOVD load+96(FP), R11
	CBZ  R11, f4start
	MOVD R8, R11
	VLD1 (R11), [V0.S4, V1.S4, V2.S4, V3.S4]
	ADD  R6, R11, R11
	VLD1 (R11), [V4.S4, V5.S4, V6.S4, V7.S4]
	ADD  R6, R11, R11
	VLD1 (R11), [V8.S4, V9.S4, V10.S4, V11.S4]
	ADD  R6, R11, R11
	VLD1 (R11), [V12.S4, V13.S4, V14.S4, V15.S4]
f4start:
	CBZ R3, f4done
f4loop:
	VLD1.P 64(R2), [V16.S4, V17.S4, V18.S4, V19.S4] // B[k][0:16]
	VLD1R.P 4(R0), [V20.S4] // a[0][k]
	VFMLA V16.S4, V20.S4, V0.S4
	VFMLA V17.S4, V20.S4, V1.S4
	VFMLA V18.S4, V20.S4, V2.S4
	VFMLA V19.S4, V20.S4, V3.S4
	VLD1R.P 4(R1), [V20.S4] // a[1][k]
	VFMLA V16.S4, V20.S4, V4.S4
	VFMLA V17.S4, V20.S4, V5.S4
	VFMLA V18.S4, V20.S4, V6.S4
	VFMLA V19.S4, V20.S4, V7.S4
	VLD1R.P 4(R9), [V20.S4] // a[2][k]
	VFMLA V16.S4, V20.S4, V8.S4
	VFMLA V17.S4, V20.S4, V9.S4
	VFMLA V18.S4, V20.S4, V10.S4
	VFMLA V19.S4, V20.S4, V11.S4
	VLD1R.P 4(R10), [V20.S4] // a[3][k]
	VFMLA V16.S4, V20.S4, V12.S4
	VFMLA V17.S4, V20.S4, V13.S4
	VFMLA V18.S4, V20.S4, V14.S4
	VFMLA V19.S4, V20.S4, V15.S4
	SUB $1, R3
	CBNZ R3, f4loop
f4done:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R8)
	ADD R6, R8, R8
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R8)
	ADD R6, R8, R8
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R8)
	ADD R6, R8, R8
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R8)
	RET

// func fTile1NEON(a []float32, bp []float32, k int, c []float32, load int)
TEXT ·fTile1NEON(SB), NOSPLIT, $0-88
	MOVD a_base+0(FP), R0
	MOVD bp_base+24(FP), R2
	MOVD k+48(FP), R3
	MOVD c_base+56(FP), R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	MOVD load+80(FP), R11
	CBZ  R11, f1start
	VLD1 (R8), [V0.S4, V1.S4, V2.S4, V3.S4]
f1start:
	CBZ  R3, f1done
f1loop:
	VLD1.P  64(R2), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1R.P 4(R0), [V20.S4]
	VFMLA   V16.S4, V20.S4, V0.S4 // c[0:4] += a[k]·B[k][0:4]
	VFMLA   V17.S4, V20.S4, V1.S4
	VFMLA   V18.S4, V20.S4, V2.S4
	VFMLA   V19.S4, V20.S4, V3.S4
	SUB     $1, R3
	CBNZ    R3, f1loop
f1done:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R8)
	RET

// func minMax4NEON(x []float32, out *[12]float32)
//
// out[0:4] lane minimums, out[4:8] lane maximums, out[8:12] lane sums of
// x·0 (0 unless some x is NaN or ±Inf). len(x) is a positive multiple of 4.
TEXT ·minMax4NEON(SB), NOSPLIT, $0-32
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R3
	MOVD out+24(FP), R8
	VLD1 (R0), [V0.S4]            // minimums
	VMOV V0.B16, V1.B16           // maximums
	VEOR V2.B16, V2.B16, V2.B16   // Σ x·0
	VEOR V3.B16, V3.B16, V3.B16   // zero
mmloop:
	VLD1.P 16(R0), [V4.S4]
	WORD $0x4ea4f400 // FMIN V0.4S, V0.4S, V4.4S
	WORD $0x4e24f421 // FMAX V1.4S, V1.4S, V4.4S
	WORD $0x6e23dc85 // FMUL V5.4S, V4.4S, V3.4S
	WORD $0x4e25d442 // FADD V2.4S, V2.4S, V5.4S
	SUB  $4, R3
	CBNZ R3, mmloop
	VST1 [V0.S4, V1.S4, V2.S4], (R8)
	RET

// func quantizeDivU8NEON(x []float32, f float32, zp int32, lo, hi float32, u []uint8)
//
// u[i] = int32(roundEven(clamp(x[i]/f, lo, hi))) + zp, len(x) a
// multiple of 8.
TEXT ·quantizeDivU8NEON(SB), NOSPLIT, $0-64
	QUANTIZE_SETUP
	CBZ  R3, ddone
dloop:
	QUANTIZE8(0x6e20fc00) // FDIV
	SUB  $8, R3
	CBNZ R3, dloop
ddone:
	RET

// func quantizeU8NEON(x []float32, f float32, zp int32, lo, hi float32, u []uint8)
//
// u[i] = int32(roundEven(clamp(x[i]·f, lo, hi))) + zp, len(x) a multiple of 8.
TEXT ·quantizeU8NEON(SB), NOSPLIT, $0-64
	QUANTIZE_SETUP
	CBZ  R3, qdone
qloop:
	QUANTIZE8(0x6e20dc00) // FMUL
	SUB  $8, R3
	CBNZ R3, qloop
qdone:
	RET
