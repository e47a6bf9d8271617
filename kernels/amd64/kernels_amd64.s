//go:build gc && !purego

#include "textflag.h"

// QUANTIZE_SETUP(top) loads the arguments of quantizeU8AVX2 and
// quantizeDivU8AVX2 (x, f, zp, u): SI x, CX len(x), DI u, Y0 f, Y1 zp,
// Y2 and Y3 the clamp's bounds -zp and top - zp, in every lane.
#define QUANTIZE_SETUP(top) \
	MOVQ         x_base+0(FP), SI \
	MOVQ         x_len+8(FP), CX \
	VBROADCASTSS f+24(FP), Y0 \
	MOVQ         u_base+32(FP), DI \
	MOVL         zp+28(FP), AX \
	VMOVD        AX, X1 \
	VPBROADCASTD X1, Y1 \
	MOVL         AX, BX \
	NEGL         BX \
	VCVTSI2SSL   BX, X2, X2 \
	VBROADCASTSS X2, Y2 \
	MOVL         top, BX \
	SUBL         AX, BX \
	VCVTSI2SSL   BX, X3, X3 \
	VBROADCASTSS X3, Y3

// QUANTIZE8(op) quantizes 8 values of x (SI) into u (DI), both moving on,
// CX counting down: each value goes through op with f (VMULPS, VDIVPS:
// rounded once), is clamped to [lo, hi], rounded half to even (MXCSR's
// default) and given zp, then packed to bytes (VEX forms only: no
// legacy-SSE instruction inside an AVX loop).
#define QUANTIZE8(op) \
	VMOVUPS      (SI), Y4 \
	op           Y0, Y4, Y4 \
	VMAXPS       Y2, Y4, Y4 \
	VMINPS       Y3, Y4, Y4 \
	VCVTPS2DQ    Y4, Y4 \
	VPADDD       Y1, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPACKSSDW    X5, X4, X4 \
	VPACKUSWB    X4, X4, X4 \
	VMOVQ        X4, (DI) \
	ADDQ         $32, SI \
	ADDQ         $8, DI \
	SUBQ         $8, CX

// Q4STEP accumulates one group of 4 k of a 4×16 quantized tile: rows at
// SI, R8, R9, R10 indexed by AX (+ao), the panel at BX (+bo).
//   acc[r][0:16] += Σ_j u[r][k+j] · b[k+j][0:16]
#define Q4STEP(ao, bo) \
	VMOVDQU      bo(BX), Y8 \
	VMOVDQU      bo+32(BX), Y9 \
	VPBROADCASTD ao(SI)(AX*1), Y10 \
	VPMADDUBSW   Y8, Y10, Y11 \
	VPMADDWD     Y15, Y11, Y11 \
	VPADDD       Y11, Y0, Y0 \
	VPMADDUBSW   Y9, Y10, Y12 \
	VPMADDWD     Y15, Y12, Y12 \
	VPADDD       Y12, Y1, Y1 \
	VPBROADCASTD ao(R8)(AX*1), Y13 \
	VPMADDUBSW   Y8, Y13, Y11 \
	VPMADDWD     Y15, Y11, Y11 \
	VPADDD       Y11, Y2, Y2 \
	VPMADDUBSW   Y9, Y13, Y12 \
	VPMADDWD     Y15, Y12, Y12 \
	VPADDD       Y12, Y3, Y3 \
	VPBROADCASTD ao(R9)(AX*1), Y10 \
	VPMADDUBSW   Y8, Y10, Y11 \
	VPMADDWD     Y15, Y11, Y11 \
	VPADDD       Y11, Y4, Y4 \
	VPMADDUBSW   Y9, Y10, Y12 \
	VPMADDWD     Y15, Y12, Y12 \
	VPADDD       Y12, Y5, Y5 \
	VPBROADCASTD ao(R10)(AX*1), Y13 \
	VPMADDUBSW   Y8, Y13, Y11 \
	VPMADDWD     Y15, Y11, Y11 \
	VPADDD       Y11, Y6, Y6 \
	VPMADDUBSW   Y9, Y13, Y12 \
	VPMADDWD     Y15, Y12, Y12 \
	VPADDD       Y12, Y7, Y7

// SCALEROW writes one row of a scaled tile: lo/hi hold the row's int32
// accumulators for columns 0-7 and 8-15, i the byte offset of the row's
// entry in off (R8) and sa (R9). Y8/Y9 = colsum, Y10/Y11 = sb, DX = c row.
//   c[0:16] = float32(acc + off·colsum) · sa · sb
#define SCALEROW(lo, hi, i) \
	VPBROADCASTD i(R8), Y12 \
	VPMULLD      Y8, Y12, Y13 \
	VPADDD       Y13, lo, lo \
	VPMULLD      Y9, Y12, Y13 \
	VPADDD       Y13, hi, hi \
	VCVTDQ2PS    lo, lo \
	VCVTDQ2PS    hi, hi \
	VBROADCASTSS i(R9), Y12 \
	VMULPS       Y12, lo, lo \
	VMULPS       Y12, hi, hi \
	VMULPS       Y10, lo, lo \
	VMULPS       Y11, hi, hi \
	VMOVUPS      lo, (DX) \
	VMOVUPS      hi, 32(DX)

// Register contract of the quantized tiles:
//   Y15 = sixteen int16 ones (vpmaddwd folds pairs of int16 into int32)
//   per 4 k of one row: vpbroadcastd the row's 4 activation bytes, then for
//   each 8-column half of the panel:
//     t = vpmaddubsw(u8 activations, s8 weights)  // 16 int16 pair sums, exact
//     t = vpmaddwd(t, ones)                       // 8 int32: 4-k dot per column
//     acc += t

// func qTile4AVX2(u []uint8, ldu int, bp []int8, kq int, acc []int32)
TEXT ·qTile4AVX2(SB), NOSPLIT, $0-88
	MOVQ u_base+0(FP), SI
	MOVQ ldu+24(FP), DI
	MOVQ bp_base+32(FP), BX
	MOVQ kq+56(FP), CX
	MOVQ acc_base+64(FP), DX
	CALL qtile4core<>(SB)
	VMOVDQU Y0, (DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VMOVDQU Y4, 128(DX)
	VMOVDQU Y5, 160(DX)
	VMOVDQU Y6, 192(DX)
	VMOVDQU Y7, 224(DX)
	VZEROUPPER
	RET

// qtile4core<> accumulates a 4×16 tile.
// In:  SI = u (row 0), DI = ldu, BX = packed panel, CX = kq (groups of 4 k).
// Out: Y0..Y7 = acc (row r, columns 0-7 in Y(2r), 8-15 in Y(2r+1)).
// Clobbers AX, R8-R11, Y8-Y15.
TEXT qtile4core<>(SB), NOSPLIT|NOFRAME, $0-0
	LEAQ (SI)(DI*1), R8       // row 1
	LEAQ (SI)(DI*2), R9       // row 2
	LEAQ (R8)(DI*2), R10      // row 3
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15    // Y15 = 1 in every int16
	VPXOR    Y0, Y0, Y0
	VPXOR    Y1, Y1, Y1
	VPXOR    Y2, Y2, Y2
	VPXOR    Y3, Y3, Y3
	VPXOR    Y4, Y4, Y4
	VPXOR    Y5, Y5, Y5
	VPXOR    Y6, Y6, Y6
	VPXOR    Y7, Y7, Y7
	XORQ     AX, AX           // byte offset into each row
	SHLQ     $2, CX           // CX = 4·kq, the end offset
	LEAQ     -8(CX), R11      // last offset that starts two whole groups
	CMPQ     AX, R11
	JGT      q4single

q4loop:                           // two groups of 4 k per iteration
	PREFETCHT0 1024(BX)           // the panel streams from memory: ask early
	PREFETCHT0 1088(BX)
	Q4STEP(0, 0)
	Q4STEP(4, 64)
	ADDQ $128, BX
	ADDQ $8, AX
	CMPQ AX, R11
	JLE  q4loop

q4single:
	CMPQ AX, CX
	JGE  q4done
	Q4STEP(0, 0)

q4done:
	RET

// func qPanelAVX2(u []uint8, ldu int, tiles int, bp []int8, kq int, off []int32, sa []float32, colsum []int32, sb []float32, c []float32, ldc int)
//
// For each of tiles 4-row tiles (rows 4t..4t+3 of u, off, sa and c):
//   c[r*ldc+j] = float32(acc[r][j] + off[r]·colsum[j]) · sa[r] · sb[j]
// The running pointers live in the argument slots between tiles.
TEXT ·qPanelAVX2(SB), NOSPLIT, $0-200

qptile:
	MOVQ tiles+32(FP), AX
	TESTQ AX, AX
	JZ   qpdone
	MOVQ u_base+0(FP), SI
	MOVQ ldu+24(FP), DI
	MOVQ bp_base+40(FP), BX
	MOVQ kq+64(FP), CX
	CALL qtile4core<>(SB)
	MOVQ off_base+72(FP), R8
	MOVQ sa_base+96(FP), R9
	MOVQ colsum_base+120(FP), R10
	MOVQ sb_base+144(FP), R11
	MOVQ c_base+168(FP), DX
	MOVQ ldc+192(FP), R12
	SHLQ $2, R12              // ldc in bytes
	VMOVDQU (R10), Y8         // colsum[0:8]
	VMOVDQU 32(R10), Y9       // colsum[8:16]
	VMOVUPS (R11), Y10        // sb[0:8]
	VMOVUPS 32(R11), Y11      // sb[8:16]
	SCALEROW(Y0, Y1, 0)
	ADDQ R12, DX
	SCALEROW(Y2, Y3, 4)
	ADDQ R12, DX
	SCALEROW(Y4, Y5, 8)
	ADDQ R12, DX
	SCALEROW(Y6, Y7, 12)
	ADDQ R12, DX
	MOVQ DX, c_base+168(FP)   // next tile: four rows down
	ADDQ $16, R8
	MOVQ R8, off_base+72(FP)
	ADDQ $16, R9
	MOVQ R9, sa_base+96(FP)
	MOVQ ldu+24(FP), DI
	SHLQ $2, DI
	ADDQ DI, u_base+0(FP)
	DECQ tiles+32(FP)
	JMP  qptile

qpdone:
	VZEROUPPER
	RET

// func qTile1AVX2(u []uint8, bp []int8, kq int, acc []int32)
TEXT ·qTile1AVX2(SB), NOSPLIT, $0-80
	MOVQ u_base+0(FP), SI
	MOVQ bp_base+24(FP), BX
	MOVQ kq+48(FP), CX
	MOVQ acc_base+56(FP), DX

	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VPXOR    Y0, Y0, Y0
	VPXOR    Y1, Y1, Y1
	VPXOR    Y2, Y2, Y2
	VPXOR    Y3, Y3, Y3
	CMPQ     CX, $2
	JL       q1tail

q1loop2:                          // two groups of 4 k per iteration, two accumulator pairs
	PREFETCHT0   2048(BX)
	PREFETCHT0   2112(BX)
	VPBROADCASTD (SI), Y10
	VPMADDUBSW   (BX), Y10, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   32(BX), Y10, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1
	VPBROADCASTD 4(SI), Y13
	VPMADDUBSW   64(BX), Y13, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   96(BX), Y13, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y3, Y3
	ADDQ         $8, SI
	ADDQ         $128, BX
	SUBQ         $2, CX
	CMPQ         CX, $2
	JGE          q1loop2

q1tail:
	TESTQ CX, CX
	JZ    q1done
	VPBROADCASTD (SI), Y10
	VPMADDUBSW   (BX), Y10, Y11
	VPMADDWD     Y15, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   32(BX), Y10, Y12
	VPMADDWD     Y15, Y12, Y12
	VPADDD       Y12, Y1, Y1

q1done:
	VPADDD  Y2, Y0, Y0
	VPADDD  Y3, Y1, Y1
	VMOVDQU Y0, (DX)
	VMOVDQU Y1, 32(DX)
	VZEROUPPER
	RET

// Register contract of the float tiles: Y0-Y11 accumulate C (row r in
// Y(2r), Y(2r+1)); Y12, Y13 hold the panel's 16 values of B at k; Y14 is
// the broadcast A value.

// func fTile6AVX2(a []float32, lda int, bp []float32, k int, c []float32, ldc int, load int)
//
// With load != 0 the sums start from c's values (a product split along K).
TEXT ·fTile6AVX2(SB), NOSPLIT, $0-104
	MOVQ a_base+0(FP), SI
	MOVQ lda+24(FP), DI
	SHLQ $2, DI               // lda in bytes
	MOVQ bp_base+32(FP), BX
	MOVQ k+56(FP), CX
	MOVQ c_base+64(FP), DX
	MOVQ ldc+88(FP), R11
	SHLQ $2, R11
	LEAQ (SI)(DI*1), R8       // row 1
	LEAQ (SI)(DI*2), R9       // row 2
	LEAQ (R8)(DI*2), R10      // row 3
	LEAQ (R9)(DI*2), R12      // row 4
	LEAQ (R10)(DI*2), R13     // row 5

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	CMPQ   load+96(FP), $0
	JEQ    f6start
	MOVQ   DX, AX
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	ADDQ   R11, AX
	VMOVUPS (AX), Y2
	VMOVUPS 32(AX), Y3
	ADDQ   R11, AX
	VMOVUPS (AX), Y4
	VMOVUPS 32(AX), Y5
	ADDQ   R11, AX
	VMOVUPS (AX), Y6
	VMOVUPS 32(AX), Y7
	ADDQ   R11, AX
	VMOVUPS (AX), Y8
	VMOVUPS 32(AX), Y9
	ADDQ   R11, AX
	VMOVUPS (AX), Y10
	VMOVUPS 32(AX), Y11

f6start:
	TESTQ  CX, CX
	JZ     f6done

f6loop:
	PREFETCHT0   4096(BX)     // a page ahead: the weights may come from memory
	VMOVUPS      (BX), Y12    // B[k][0:8]
	VMOVUPS      32(BX), Y13  // B[k][8:16]
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0 // C[0][0:8] += a[0][k]·B[k][0:8]
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (R8), Y14
	VFMADD231PS  Y12, Y14, Y2
	VFMADD231PS  Y13, Y14, Y3
	VBROADCASTSS (R9), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (R10), Y14
	VFMADD231PS  Y12, Y14, Y6
	VFMADD231PS  Y13, Y14, Y7
	VBROADCASTSS (R12), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (R13), Y14
	VFMADD231PS  Y12, Y14, Y10
	VFMADD231PS  Y13, Y14, Y11
	ADDQ         $4, SI
	ADDQ         $4, R8
	ADDQ         $4, R9
	ADDQ         $4, R10
	ADDQ         $4, R12
	ADDQ         $4, R13
	ADDQ         $64, BX
	DECQ         CX
	JNZ          f6loop

f6done:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R11, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R11, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R11, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ    R11, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ    R11, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func fTile1AVX2(a []float32, bp []float32, k int, c []float32, load int)
//
// One accumulator chain per 8 columns, in k order: the same sums, with the
// same roundings, as a row of fTile6AVX2, so a row's result never depends
// on the rows batched with it.
TEXT ·fTile1AVX2(SB), NOSPLIT, $0-88
	MOVQ a_base+0(FP), SI
	MOVQ bp_base+24(FP), BX
	MOVQ k+48(FP), CX
	MOVQ c_base+56(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ   load+80(FP), $0
	JEQ    f1start
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1

f1start:
	TESTQ  CX, CX
	JZ     f1done

f1loop:
	PREFETCHT0   2048(BX)
	VBROADCASTSS (SI), Y14
	VFMADD231PS  (BX), Y14, Y0   // c[0:8] += a[k]·B[k][0:8]
	VFMADD231PS  32(BX), Y14, Y1 // c[8:16]
	ADDQ         $4, SI
	ADDQ         $64, BX
	DECQ         CX
	JNZ          f1loop

f1done:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET

// func minMax8AVX2(x []float32, out *[24]float32)
//
// Lane minimums, maximums and Σ x·0 (0 unless some x is NaN or ±Inf) of
// x (len(x) a multiple of 8, at least 8): 32 at a time in four
// independent sets of lanes (one chain of VMINPS would wait on its own
// latency), then 8 at a time, the sets combined at the end.
TEXT ·minMax8AVX2(SB), NOSPLIT, $0-32
	MOVQ    x_base+0(FP), SI
	MOVQ    x_len+8(FP), CX
	MOVQ    out+24(FP), DX
	VMOVUPS (SI), Y0          // lane minimums (sets: Y0, Y6, Y8, Y10)
	VMOVAPS Y0, Y1            // lane maximums (sets: Y1, Y7, Y9, Y11)
	VMOVAPS Y0, Y6
	VMOVAPS Y0, Y7
	VMOVAPS Y0, Y8
	VMOVAPS Y0, Y9
	VMOVAPS Y0, Y10
	VMOVAPS Y0, Y11
	VXORPS  Y2, Y2, Y2        // Σ x·0 (sets: Y2, Y12, Y13, Y14)
	VXORPS  Y12, Y12, Y12
	VXORPS  Y13, Y13, Y13
	VXORPS  Y14, Y14, Y14
	VXORPS  Y3, Y3, Y3        // zero

mm32:
	CMPQ    CX, $32
	JLT     mm8
	VMOVUPS (SI), Y4
	VMINPS  Y4, Y0, Y0
	VMAXPS  Y4, Y1, Y1
	VMULPS  Y3, Y4, Y5
	VADDPS  Y5, Y2, Y2
	VMOVUPS 32(SI), Y4
	VMINPS  Y4, Y6, Y6
	VMAXPS  Y4, Y7, Y7
	VMULPS  Y3, Y4, Y5
	VADDPS  Y5, Y12, Y12
	VMOVUPS 64(SI), Y4
	VMINPS  Y4, Y8, Y8
	VMAXPS  Y4, Y9, Y9
	VMULPS  Y3, Y4, Y5
	VADDPS  Y5, Y13, Y13
	VMOVUPS 96(SI), Y4
	VMINPS  Y4, Y10, Y10
	VMAXPS  Y4, Y11, Y11
	VMULPS  Y3, Y4, Y5
	VADDPS  Y5, Y14, Y14
	ADDQ    $128, SI
	SUBQ    $32, CX
	JMP     mm32

mm8:
	TESTQ   CX, CX
	JZ      mmdone
	VMOVUPS (SI), Y4
	VMINPS  Y4, Y0, Y0
	VMAXPS  Y4, Y1, Y1
	VMULPS  Y3, Y4, Y5
	VADDPS  Y5, Y2, Y2
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     mm8

mmdone:
	VMINPS  Y6, Y0, Y0
	VMINPS  Y8, Y0, Y0
	VMINPS  Y10, Y0, Y0
	VMAXPS  Y7, Y1, Y1
	VMAXPS  Y9, Y1, Y1
	VMAXPS  Y11, Y1, Y1
	VADDPS  Y12, Y2, Y2
	VADDPS  Y13, Y2, Y2
	VADDPS  Y14, Y2, Y2
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VZEROUPPER
	RET

// func quantizeU8AVX2(x []float32, f float32, zp int32, u []uint8)
//
// kernels.QuantizeU8 on len(x) a multiple of 8: 16 at a time, then 8.
TEXT ·quantizeU8AVX2(SB), NOSPLIT, $0-56
	QUANTIZE_SETUP($127)
	TESTQ        CX, CX
	JZ           qdone

q16:
	CMPQ        CX, $16
	JLT         qloop
	VMULPS      (SI), Y0, Y4      // x·f
	VMULPS      32(SI), Y0, Y5
	VMAXPS      Y2, Y4, Y4
	VMAXPS      Y2, Y5, Y5
	VMINPS      Y3, Y4, Y4        // clamp to [lo, hi]
	VMINPS      Y3, Y5, Y5
	VCVTPS2DQ   Y4, Y4            // round half to even (MXCSR default)
	VCVTPS2DQ   Y5, Y5
	VPADDD      Y1, Y4, Y4        // + zp, now in [0, 127]
	VPADDD      Y1, Y5, Y5
	VPACKSSDW   Y5, Y4, Y4        // 16 int16, per 128-bit lane: 0-3 8-11 | 4-7 12-15
	VPERMQ      $0xD8, Y4, Y4     // 0-3 4-7 | 8-11 12-15
	VEXTRACTI128 $1, Y4, X5
	VPACKUSWB   X5, X4, X4        // 16 uint8
	VMOVDQU     X4, (DI)
	ADDQ        $64, SI
	ADDQ        $16, DI
	SUBQ        $16, CX
	JMP         q16

qloop:
	TESTQ CX, CX
	JZ    qdone
	QUANTIZE8(VMULPS)
	JMP   qloop

qdone:
	VZEROUPPER
	RET

// func quantizeDivU8AVX2(x []float32, f float32, zp int32, u []uint8)
//
// kernels.QuantizeDivU8 on len(x) a multiple of 8, 8 at a time (the
// division's throughput bounds it, not the loop).
TEXT ·quantizeDivU8AVX2(SB), NOSPLIT, $0-56
	QUANTIZE_SETUP($255)

dloop:
	TESTQ CX, CX
	JZ    ddone
	QUANTIZE8(VDIVPS)
	JMP   dloop

ddone:
	VZEROUPPER
	RET

// Machine limits for the benchmark: register-only loops with enough
// independent chains to keep every port busy, and a streaming read.

// func peakInt8AVX2(iters int) int32
TEXT ·peakInt8AVX2(SB), NOSPLIT, $0-12
	MOVQ     iters+0(FP), CX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15       // int16 ones
	VPABSB   Y15, Y14            // bytes 1,0,... as u8 operand
	VMOVDQA  Y14, Y13            // s8 operand
	VPXOR    Y0, Y0, Y0
	VPXOR    Y1, Y1, Y1
	VPXOR    Y2, Y2, Y2
	VPXOR    Y3, Y3, Y3
	VPXOR    Y4, Y4, Y4
	VPXOR    Y5, Y5, Y5
	VPXOR    Y6, Y6, Y6
	VPXOR    Y7, Y7, Y7

pi8loop:                            // 8 chains × (vpmaddubsw + vpmaddwd + vpaddd) = 8×64 int ops
	VPMADDUBSW Y13, Y14, Y8
	VPMADDWD   Y15, Y8, Y8
	VPADDD     Y8, Y0, Y0
	VPMADDUBSW Y13, Y14, Y9
	VPMADDWD   Y15, Y9, Y9
	VPADDD     Y9, Y1, Y1
	VPMADDUBSW Y13, Y14, Y10
	VPMADDWD   Y15, Y10, Y10
	VPADDD     Y10, Y2, Y2
	VPMADDUBSW Y13, Y14, Y11
	VPMADDWD   Y15, Y11, Y11
	VPADDD     Y11, Y3, Y3
	VPMADDUBSW Y13, Y14, Y8
	VPMADDWD   Y15, Y8, Y8
	VPADDD     Y8, Y4, Y4
	VPMADDUBSW Y13, Y14, Y9
	VPMADDWD   Y15, Y9, Y9
	VPADDD     Y9, Y5, Y5
	VPMADDUBSW Y13, Y14, Y10
	VPMADDWD   Y15, Y10, Y10
	VPADDD     Y10, Y6, Y6
	VPMADDUBSW Y13, Y14, Y11
	VPMADDWD   Y15, Y11, Y11
	VPADDD     Y11, Y7, Y7
	DECQ       CX
	JNZ        pi8loop

	VPADDD Y1, Y0, Y0
	VPADDD Y2, Y0, Y0
	VPADDD Y3, Y0, Y0
	VPADDD Y4, Y0, Y0
	VPADDD Y5, Y0, Y0
	VPADDD Y6, Y0, Y0
	VPADDD Y7, Y0, Y0
	VMOVD  X0, AX
	MOVL   AX, ret+8(FP)
	VZEROUPPER
	RET

// func peakF32FMA(iters int) float32
TEXT ·peakF32FMA(SB), NOSPLIT, $0-12
	MOVQ         iters+0(FP), CX
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	MOVL         $0x3f800000, AX
	VMOVD        AX, X12
	VBROADCASTSS X12, Y12       // 1.0
	VMOVAPS      Y12, Y13

pf32loop:                          // 12 chains × 16 flops
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ        CX
	JNZ         pf32loop

	VADDPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y0, Y0
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y0, Y0
	VADDPS Y6, Y0, Y0
	VADDPS Y7, Y0, Y0
	VADDPS Y8, Y0, Y0
	VADDPS Y9, Y0, Y0
	VADDPS Y10, Y0, Y0
	VADDPS Y11, Y0, Y0
	VMOVSS X0, ret+8(FP)
	VZEROUPPER
	RET

// func readSumAVX2(buf []byte) uint64
TEXT ·readSumAVX2(SB), NOSPLIT, $0-32
	MOVQ  buf_base+0(FP), SI
	MOVQ  buf_len+8(FP), CX
	SHRQ  $7, CX                // 128-byte blocks
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	TESTQ CX, CX
	JZ    rsdone

rsloop:
	PREFETCHT0 2048(SI)             // software prefetch, as the kernels do
	PREFETCHT0 2112(SI)
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	ADDQ  $128, SI
	DECQ  CX
	JNZ   rsloop

rsdone:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	MOVQ  AX, ret+24(FP)
	VZEROUPPER
	RET

// func readSum4AVX2(buf []byte, quarter int) uint64
TEXT ·readSum4AVX2(SB), NOSPLIT, $0-40
	MOVQ  buf_base+0(FP), SI       // stream 0; stream 1 at SI+DX
	MOVQ  quarter+24(FP), DX
	LEAQ  (SI)(DX*2), DI           // stream 2; stream 3 at DI+DX
	MOVQ  DX, CX
	SHRQ  $7, CX                   // 128-byte blocks per stream
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	TESTQ CX, CX
	JZ    r4done

r4loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2048(SI)(DX*1)
	PREFETCHT0 2112(SI)(DX*1)
	PREFETCHT0 2048(DI)
	PREFETCHT0 2112(DI)
	PREFETCHT0 2048(DI)(DX*1)
	PREFETCHT0 2112(DI)(DX*1)
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	VPXOR (SI)(DX*1), Y0, Y0
	VPXOR 32(SI)(DX*1), Y1, Y1
	VPXOR 64(SI)(DX*1), Y2, Y2
	VPXOR 96(SI)(DX*1), Y3, Y3
	VPXOR (DI), Y0, Y0
	VPXOR 32(DI), Y1, Y1
	VPXOR 64(DI), Y2, Y2
	VPXOR 96(DI), Y3, Y3
	VPXOR (DI)(DX*1), Y0, Y0
	VPXOR 32(DI)(DX*1), Y1, Y1
	VPXOR 64(DI)(DX*1), Y2, Y2
	VPXOR 96(DI)(DX*1), Y3, Y3
	ADDQ  $128, SI
	ADDQ  $128, DI
	DECQ  CX
	JNZ   r4loop

r4done:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	MOVQ  AX, ret+32(FP)
	VZEROUPPER
	RET
