//go:build gc && !purego

#include "textflag.h"

// func depthwiseRowsAVX512(dst, src, w []float32, offs []int, step, channels, width, pixels int)
//
// kernels.DepthwiseRows on channels [0, width) of each of the pixels
// (len(dst) = pixels·channels), with fused multiply-adds in tap order as
// depthwiseRowsAVX2 adds them (the same bits):
//
//	dst[p·ch + c] = FMA(w[t·ch + c], src[p·step + offs[t] + c], dst[p·ch + c])
//
// Pixels go four at a time (then one at a time), each block of 32 (then
// 16) channels of the four in registers while every tap is added: eight
// (four) independent accumulators. width is a positive multiple of 16,
// at most channels; len(offs) >= 1.
//
// Register contract: DI &dst[p], SI &src[p·step], R8 &w[0], R9 &offs[0],
// R10 &offs[len], BX step in bytes, R15 3·step in bytes, DX channels in
// bytes (a pixel of dst, a tap of w), CX pixels left, R11 the channel c,
// R12 the tap's offs, R13 &src[p·step + c], R14 &w[t·ch + c], AX scratch.
TEXT ·depthwiseRowsAVX512(SB), NOSPLIT, $0-128
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ w_base+48(FP), R8
	MOVQ offs_base+72(FP), R9
	MOVQ offs_len+80(FP), R10
	LEAQ (R9)(R10*8), R10
	MOVQ step+96(FP), BX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R15
	MOVQ channels+104(FP), DX
	SHLQ $2, DX
	MOVQ pixels+120(FP), CX

quad:
	CMPQ CX, $4
	JLT  single
	XORQ R11, R11

quadblock:
	MOVQ width+112(FP), AX
	SUBQ R11, AX             // channels left: a multiple of 16
	CMPQ AX, $32
	JLT  quad16
	LEAQ (DI)(R11*4), AX     // acc = dst[p..p+3][c:c+32]
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS (AX)(DX*1), Z2
	VMOVUPS 64(AX)(DX*1), Z3
	LEAQ (AX)(DX*2), AX
	VMOVUPS (AX), Z4
	VMOVUPS 64(AX), Z5
	VMOVUPS (AX)(DX*1), Z6
	VMOVUPS 64(AX)(DX*1), Z7
	LEAQ (SI)(R11*4), R13
	LEAQ (R8)(R11*4), R14
	MOVQ R9, R12

quad32tap:
	MOVQ        (R12), AX
	LEAQ        (R13)(AX*4), AX      // &src[p·step + offs[t] + c]
	VMOVUPS     (R14), Z8            // w[t·ch + c : +32]
	VMOVUPS     64(R14), Z9
	VFMADD231PS (AX), Z8, Z0         // pixel p
	VFMADD231PS 64(AX), Z9, Z1
	VFMADD231PS (AX)(BX*1), Z8, Z2   // pixel p+1
	VFMADD231PS 64(AX)(BX*1), Z9, Z3
	VFMADD231PS (AX)(BX*2), Z8, Z4   // pixel p+2
	VFMADD231PS 64(AX)(BX*2), Z9, Z5
	VFMADD231PS (AX)(R15*1), Z8, Z6  // pixel p+3
	VFMADD231PS 64(AX)(R15*1), Z9, Z7
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         quad32tap
	LEAQ    (DI)(R11*4), AX
	VMOVUPS Z0, (AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, (AX)(DX*1)
	VMOVUPS Z3, 64(AX)(DX*1)
	LEAQ    (AX)(DX*2), AX
	VMOVUPS Z4, (AX)
	VMOVUPS Z5, 64(AX)
	VMOVUPS Z6, (AX)(DX*1)
	VMOVUPS Z7, 64(AX)(DX*1)
	ADDQ    $32, R11
	JMP     quadblock

quad16:
	TESTQ AX, AX
	JZ    quadnext
	LEAQ  (DI)(R11*4), AX    // acc = dst[p..p+3][c:c+16]
	VMOVUPS (AX), Z0
	VMOVUPS (AX)(DX*1), Z2
	LEAQ  (AX)(DX*2), AX
	VMOVUPS (AX), Z4
	VMOVUPS (AX)(DX*1), Z6
	LEAQ  (SI)(R11*4), R13
	LEAQ  (R8)(R11*4), R14
	MOVQ  R9, R12

quad16tap:
	MOVQ        (R12), AX
	LEAQ        (R13)(AX*4), AX
	VMOVUPS     (R14), Z8
	VFMADD231PS (AX), Z8, Z0
	VFMADD231PS (AX)(BX*1), Z8, Z2
	VFMADD231PS (AX)(BX*2), Z8, Z4
	VFMADD231PS (AX)(R15*1), Z8, Z6
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         quad16tap
	LEAQ    (DI)(R11*4), AX
	VMOVUPS Z0, (AX)
	VMOVUPS Z2, (AX)(DX*1)
	LEAQ    (AX)(DX*2), AX
	VMOVUPS Z4, (AX)
	VMOVUPS Z6, (AX)(DX*1)
	ADDQ    $16, R11
	JMP     quadblock

quadnext:
	LEAQ (DI)(DX*4), DI      // four pixels on
	LEAQ (SI)(BX*4), SI
	SUBQ $4, CX
	JMP  quad

single:
	TESTQ CX, CX
	JZ    done
	XORQ  R11, R11

singleblock:
	MOVQ width+112(FP), AX
	CMPQ R11, AX
	JGE  singlenext
	LEAQ    (DI)(R11*4), AX  // acc = dst[p][c:c+16]
	VMOVUPS (AX), Z0
	LEAQ    (SI)(R11*4), R13
	LEAQ    (R8)(R11*4), R14
	MOVQ    R9, R12

singletap:
	MOVQ        (R12), AX
	VMOVUPS     (R14), Z8
	VFMADD231PS (R13)(AX*4), Z8, Z0
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         singletap
	VMOVUPS Z0, (DI)(R11*4)
	ADDQ    $16, R11
	JMP     singleblock

singlenext:
	ADDQ DX, DI              // a pixel on
	ADDQ BX, SI
	DECQ CX
	JMP  single

done:
	VZEROUPPER
	RET
