//go:build gc && !purego

#include "textflag.h"

// func depthwiseRowsAVX2(dst, src, w []float32, offs []int, step, channels, width, pixels int)
//
// kernels.DepthwiseRows on channels [0, width) of each of the pixels
// (len(dst) = pixels·channels), with fused multiply-adds in tap order:
//
//	dst[p·ch + c] = FMA(w[t·ch + c], src[p·step + offs[t] + c], dst[p·ch + c])
//
// Pixels go four at a time (then one at a time), each block of 16 (then
// 8) channels of the four in registers while every tap is added: eight
// (four) independent accumulators. width is a positive multiple of 8,
// at most channels; len(offs) >= 1.
//
// Register contract: DI &dst[p], SI &src[p·step], R8 &w[0], R9 &offs[0],
// R10 &offs[len], BX step in bytes, R15 3·step in bytes, DX channels in
// bytes (a pixel of dst, a tap of w), CX pixels left, R11 the channel c,
// R12 the tap's offs, R13 &src[p·step + c], R14 &w[t·ch + c], AX scratch.
TEXT ·depthwiseRowsAVX2(SB), NOSPLIT, $0-128
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
	SUBQ R11, AX
	CMPQ AX, $16
	JLT  quad8
	LEAQ (DI)(R11*4), AX     // acc = dst[p..p+3][c:c+16]
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS (AX)(DX*1), Y2
	VMOVUPS 32(AX)(DX*1), Y3
	LEAQ (AX)(DX*2), AX
	VMOVUPS (AX), Y4
	VMOVUPS 32(AX), Y5
	VMOVUPS (AX)(DX*1), Y6
	VMOVUPS 32(AX)(DX*1), Y7
	LEAQ (SI)(R11*4), R13
	LEAQ (R8)(R11*4), R14
	MOVQ R9, R12

quad16tap:
	MOVQ        (R12), AX
	LEAQ        (R13)(AX*4), AX      // &src[p·step + offs[t] + c]
	VMOVUPS     (R14), Y8            // w[t·ch + c : +16]
	VMOVUPS     32(R14), Y9
	VFMADD231PS (AX), Y8, Y0         // pixel p
	VFMADD231PS 32(AX), Y9, Y1
	VFMADD231PS (AX)(BX*1), Y8, Y2   // pixel p+1
	VFMADD231PS 32(AX)(BX*1), Y9, Y3
	VFMADD231PS (AX)(BX*2), Y8, Y4   // pixel p+2
	VFMADD231PS 32(AX)(BX*2), Y9, Y5
	VFMADD231PS (AX)(R15*1), Y8, Y6  // pixel p+3
	VFMADD231PS 32(AX)(R15*1), Y9, Y7
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         quad16tap
	LEAQ    (DI)(R11*4), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, (AX)(DX*1)
	VMOVUPS Y3, 32(AX)(DX*1)
	LEAQ    (AX)(DX*2), AX
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	VMOVUPS Y6, (AX)(DX*1)
	VMOVUPS Y7, 32(AX)(DX*1)
	ADDQ    $16, R11
	JMP     quadblock

quad8:
	TESTQ AX, AX             // channels left of width
	JZ    quadnext
	LEAQ  (DI)(R11*4), AX    // acc = dst[p..p+3][c:c+8]
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(DX*1), Y2
	LEAQ  (AX)(DX*2), AX
	VMOVUPS (AX), Y4
	VMOVUPS (AX)(DX*1), Y6
	LEAQ  (SI)(R11*4), R13
	LEAQ  (R8)(R11*4), R14
	MOVQ  R9, R12

quad8tap:
	MOVQ        (R12), AX
	LEAQ        (R13)(AX*4), AX
	VMOVUPS     (R14), Y8
	VFMADD231PS (AX), Y8, Y0
	VFMADD231PS (AX)(BX*1), Y8, Y2
	VFMADD231PS (AX)(BX*2), Y8, Y4
	VFMADD231PS (AX)(R15*1), Y8, Y6
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         quad8tap
	LEAQ    (DI)(R11*4), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y2, (AX)(DX*1)
	LEAQ    (AX)(DX*2), AX
	VMOVUPS Y4, (AX)
	VMOVUPS Y6, (AX)(DX*1)
	ADDQ    $8, R11
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
	LEAQ    (DI)(R11*4), AX  // acc = dst[p][c:c+8]
	VMOVUPS (AX), Y0
	LEAQ    (SI)(R11*4), R13
	LEAQ    (R8)(R11*4), R14
	MOVQ    R9, R12

singletap:
	MOVQ        (R12), AX
	VMOVUPS     (R14), Y8
	VFMADD231PS (R13)(AX*4), Y8, Y0
	ADDQ        DX, R14
	ADDQ        $8, R12
	CMPQ        R12, R10
	JNE         singletap
	VMOVUPS Y0, (DI)(R11*4)
	ADDQ    $8, R11
	CMPQ    R11, width+112(FP)
	JLT     singleblock
	ADDQ    DX, DI           // a pixel on
	ADDQ    BX, SI
	DECQ    CX
	JMP     single

done:
	VZEROUPPER
	RET
