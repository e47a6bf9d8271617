//go:build gc && !purego

#include "textflag.h"

// func lnLanesAVX2(x []float32, shift float32, a *[8]float32)
//
// Sums d = x[i] - shift and d·d (rounded, then added) over x (len(x) a
// multiple of 16) in sixteen float32 lanes each, value i to lane i mod 16
// (Y0, Y1: d; Y2, Y3: d²), then writes kernels.LayerNormLanes of each:
// a[j] = (s_j + s_j+8) + (s_j+4 + s_j+12) for d, a[4+j] for d².
TEXT ·lnLanesAVX2(SB), NOSPLIT, $0-40
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS shift+24(FP), Y8
	MOVQ         a+32(FP), DI
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

lanes16:
	CMPQ    CX, $16
	JLT     lanesdone
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VSUBPS  Y8, Y4, Y4 // d = x - shift
	VSUBPS  Y8, Y5, Y5
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VMULPS  Y4, Y4, Y6 // d·d, rounded
	VMULPS  Y5, Y5, Y7
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     lanes16

lanesdone:
	VADDPS       Y1, Y0, Y0 // b_j = s_j + s_j+8
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0 // a_j = b_j + b_j+4
	VMOVUPS      X0, (DI)
	VADDPS       Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VADDPS       X3, X2, X2
	VMOVUPS      X2, 16(DI)
	VZEROUPPER
	RET

// func lnApplyAVX2(y, x, scale, bias []float32, mean, inv float32)
//
// For every i < len(y) (a multiple of 8), 16 then 8 at a time:
// y[i] = ((x[i] - mean)·inv)·scale[i] + bias[i], each operation rounded
// (kernels.LayerNormApply), without the bias when len(bias) is 0.
TEXT ·lnApplyAVX2(SB), NOSPLIT, $0-104
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         scale_base+48(FP), DX
	MOVQ         bias_base+72(FP), BX
	MOVQ         bias_len+80(FP), R8
	VBROADCASTSS mean+96(FP), Y8
	VBROADCASTSS inv+100(FP), Y9
	XORQ         AX, AX
	TESTQ        R8, R8
	JZ           nobias16

bias16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     bias8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VSUBPS  Y8, Y0, Y0
	VSUBPS  Y8, Y1, Y1
	VMULPS  Y9, Y0, Y0
	VMULPS  Y9, Y1, Y1
	VMULPS  (DX)(AX*4), Y0, Y0
	VMULPS  32(DX)(AX*4), Y1, Y1
	VADDPS  (BX)(AX*4), Y0, Y0
	VADDPS  32(BX)(AX*4), Y1, Y1
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	MOVQ    R10, AX
	JMP     bias16

bias8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     applydone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y8, Y0, Y0
	VMULPS  Y9, Y0, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VADDPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     bias8

nobias16:
	LEAQ    16(AX), R10
	CMPQ    R10, CX
	JGT     nobias8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VSUBPS  Y8, Y0, Y0
	VSUBPS  Y8, Y1, Y1
	VMULPS  Y9, Y0, Y0
	VMULPS  Y9, Y1, Y1
	VMULPS  (DX)(AX*4), Y0, Y0
	VMULPS  32(DX)(AX*4), Y1, Y1
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	MOVQ    R10, AX
	JMP     nobias16

nobias8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     applydone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y8, Y0, Y0
	VMULPS  Y9, Y0, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     nobias8

applydone:
	VZEROUPPER
	RET
