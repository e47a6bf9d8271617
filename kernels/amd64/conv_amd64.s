//go:build gc && !purego

#include "textflag.h"

// Kernels of the convolution and pooling paths (kernels/conv.go is the
// spec). Every one but convTapsAVX2 runs the reference's float32 (or
// float64) operations lane by lane in its order and gives its bits;
// convTapsAVX2 fuses each multiply-add.

// func convTapsAVX2(dst, src, w []float32, step int)
//
// For every i < len(dst), in 32-, 8- then 1-wide blocks:
//
//	dst[i] += Σ_j w[j]·src[i + j·step]   (fused multiply-adds, in j order)
//
// Register contract: DI dst, SI src, CX values left, R8 w, R9 taps, R10
// step in bytes.
TEXT ·convTapsAVX2(SB), NOSPLIT, $0-80
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ w_base+48(FP), R8
	MOVQ w_len+56(FP), R9
	MOVQ step+72(FP), R10
	SHLQ $2, R10
	TESTQ R9, R9
	JZ   done

block32:
	CMPQ CX, $32
	JLT  block8
	VMOVUPS (DI), Y0           // acc = dst[i:i+32]
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    R8, R11            // &w[0]
	MOVQ    SI, R12            // &src[i]
	MOVQ    R9, R13

tap32:
	VBROADCASTSS (R11), Y4          // w[j]
	VFMADD231PS  (R12), Y4, Y0      // acc += w[j]·src[i+j·step : +32]
	VFMADD231PS  32(R12), Y4, Y1
	VFMADD231PS  64(R12), Y4, Y2
	VFMADD231PS  96(R12), Y4, Y3
	ADDQ         $4, R11
	ADDQ         R10, R12
	DECQ         R13
	JNZ          tap32
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $32, CX
	JMP     block32

block8:
	CMPQ CX, $8
	JLT  block1
	VMOVUPS (DI), Y0
	MOVQ    R8, R11
	MOVQ    SI, R12
	MOVQ    R9, R13

tap8:
	VBROADCASTSS (R11), Y4
	VFMADD231PS  (R12), Y4, Y0
	ADDQ         $4, R11
	ADDQ         R10, R12
	DECQ         R13
	JNZ          tap8
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     block8

block1:
	TESTQ CX, CX
	JZ    done
	VMOVSS (DI), X0
	MOVQ   R8, R11
	MOVQ   SI, R12
	MOVQ   R9, R13

tap1:
	VMOVSS      (R11), X4
	VFMADD231SS (R12), X4, X0
	ADDQ        $4, R11
	ADDQ        R10, R12
	DECQ        R13
	JNZ         tap1
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   $4, SI
	DECQ   CX
	JMP    block1

done:
	VZEROUPPER
	RET

// func transpose8AVX2(dst, src []float32, ldd, lds, n int)
//
// Transposes an 8-row strip: for j < n (a multiple of 8) and i < 8,
//
//	dst[j*ldd + i] = src[i*lds + j]
//
// 8×8 blocks at a time in registers. Register contract: SI src block,
// R12 = SI + 4 rows; DI dst block, R13 = DI + 4 rows; R8, R10 the src row
// stride and 3 strides in bytes; R9, R11 the same for dst; CX columns
// left.
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ ldd+48(FP), R9
	MOVQ lds+56(FP), R8
	MOVQ n+64(FP), CX
	SHLQ $2, R8                 // src row stride
	SHLQ $2, R9                 // dst row stride
	LEAQ (R8)(R8*2), R10        // 3 src strides
	LEAQ (R9)(R9*2), R11        // 3 dst strides
	TESTQ CX, CX
	JZ   tdone

tblock:
	LEAQ    (SI)(R8*4), R12
	VMOVUPS (SI), Y0            // row 0: a0..a7
	VMOVUPS (SI)(R8*1), Y1      // row 1: b
	VMOVUPS (SI)(R8*2), Y2      // row 2: c
	VMOVUPS (SI)(R10*1), Y3     // row 3: d
	VMOVUPS (R12), Y4           // row 4: e
	VMOVUPS (R12)(R8*1), Y5     // row 5: f
	VMOVUPS (R12)(R8*2), Y6     // row 6: g
	VMOVUPS (R12)(R10*1), Y7    // row 7: h
	VUNPCKLPS Y1, Y0, Y8        // a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS Y1, Y0, Y9        // a2 b2 a3 b3 | a6 b6 a7 b7
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0  // a0 b0 c0 d0 | a4 b4 c4 d4
	VSHUFPS $0xEE, Y10, Y8, Y1  // a1 b1 c1 d1 | a5 b5 c5 d5
	VSHUFPS $0x44, Y11, Y9, Y2  // a2 .. | a6 ..
	VSHUFPS $0xEE, Y11, Y9, Y3  // a3 .. | a7 ..
	VSHUFPS $0x44, Y14, Y12, Y4 // e0 f0 g0 h0 | e4 f4 g4 h4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8  // column 0: a0 .. h0
	VPERM2F128 $0x20, Y5, Y1, Y9  // column 1
	VPERM2F128 $0x20, Y6, Y2, Y10 // column 2
	VPERM2F128 $0x20, Y7, Y3, Y11 // column 3
	VPERM2F128 $0x31, Y4, Y0, Y12 // column 4
	VPERM2F128 $0x31, Y5, Y1, Y13 // column 5
	VPERM2F128 $0x31, Y6, Y2, Y14 // column 6
	VPERM2F128 $0x31, Y7, Y3, Y15 // column 7
	LEAQ    (DI)(R9*4), R13
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R9*1)
	VMOVUPS Y10, (DI)(R9*2)
	VMOVUPS Y11, (DI)(R11*1)
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R9*1)
	VMOVUPS Y14, (R13)(R9*2)
	VMOVUPS Y15, (R13)(R11*1)
	ADDQ $32, SI                // next 8 columns of src
	LEAQ (R13)(R9*4), DI        // next 8 rows of dst
	SUBQ $8, CX
	JNZ  tblock

tdone:
	VZEROUPPER
	RET

// func convFinishAVX2(dst, bias, res []float32, lo, hi float32)
//
// For every i < len(dst), 8 then 1 at a time:
//
//	v := dst[i] + bias[i] + res[i]   (each term only when its slice is not empty)
//	if lo > v { v = lo }             // VMAXPS v, lo: lo > v ? lo : v
//	if hi < v { v = hi }             // VMINPS v, hi: hi < v ? hi : v
//	dst[i] = v
//
// Register contract: DI dst, SI bias, DX res, CX len(dst), R8/R9 the
// lengths of bias and res (0: absent), AX the index, Y2/Y3 lo/hi.
TEXT ·convFinishAVX2(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         bias_base+24(FP), SI
	MOVQ         bias_len+32(FP), R8
	MOVQ         res_base+48(FP), DX
	MOVQ         res_len+56(FP), R9
	VBROADCASTSS lo+72(FP), Y2
	VBROADCASTSS hi+76(FP), Y3
	XORQ         AX, AX

fin8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     fin1
	VMOVUPS (DI)(AX*4), Y0
	TESTQ   R8, R8
	JZ      fin8res
	VADDPS  (SI)(AX*4), Y0, Y0  // + bias
fin8res:
	TESTQ   R9, R9
	JZ      fin8clamp
	VADDPS  (DX)(AX*4), Y0, Y0  // + residual
fin8clamp:
	VMAXPS  Y0, Y2, Y0          // lo > v ? lo : v
	VMINPS  Y0, Y3, Y0          // hi < v ? hi : v
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     fin8

fin1:
	CMPQ   AX, CX
	JGE    findone
	VMOVSS (DI)(AX*4), X0
	TESTQ  R8, R8
	JZ     fin1res
	VADDSS (SI)(AX*4), X0, X0
fin1res:
	TESTQ  R9, R9
	JZ     fin1clamp
	VADDSS (DX)(AX*4), X0, X0
fin1clamp:
	VMAXSS X0, X2, X0
	VMINSS X0, X3, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    fin1

findone:
	VZEROUPPER
	RET

// func convHardAVX2(dst []float32, a, b, lo, hi, d float32, mode int)
//
// For every i < len(dst), 8 then 1 at a time, x := dst[i]:
//
//	t := x·a + b                     (a product, then a sum: no fused multiply-add)
//	if lo > t { t = lo }             // VMAXPS t, lo
//	if hi < t { t = hi }             // VMINPS t, hi
//	dst[i] = t, x·t, x·t/d or x·t·d  (mode 0, 1, 2, 3)
//
// Register contract: DI dst, CX len(dst), AX the index, R8 mode, Y8..Y12
// a, b, lo, hi, d.
TEXT ·convHardAVX2(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	VBROADCASTSS a+24(FP), Y8
	VBROADCASTSS b+28(FP), Y9
	VBROADCASTSS lo+32(FP), Y10
	VBROADCASTSS hi+36(FP), Y11
	VBROADCASTSS d+40(FP), Y12
	MOVQ         mode+48(FP), R8
	XORQ         AX, AX

hard8:
	LEAQ    8(AX), R10
	CMPQ    R10, CX
	JGT     hard1
	VMOVUPS (DI)(AX*4), Y0
	VMULPS  Y8, Y0, Y1
	VADDPS  Y9, Y1, Y1
	VMAXPS  Y1, Y10, Y1         // lo > t ? lo : t
	VMINPS  Y1, Y11, Y1         // hi < t ? hi : t
	CMPQ    R8, $0
	JEQ     hard8store
	VMULPS  Y1, Y0, Y1          // x·t
	CMPQ    R8, $2
	JLT     hard8store
	JGT     hard8mul
	VDIVPS  Y12, Y1, Y1         // x·t/d
	JMP     hard8store
hard8mul:
	VMULPS  Y12, Y1, Y1         // x·t·d
hard8store:
	VMOVUPS Y1, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     hard8

hard1:
	CMPQ   AX, CX
	JGE    harddone
	VMOVSS (DI)(AX*4), X0
	VMULSS X8, X0, X1
	VADDSS X9, X1, X1
	VMAXSS X1, X10, X1
	VMINSS X1, X11, X1
	CMPQ   R8, $0
	JEQ    hard1store
	VMULSS X1, X0, X1
	CMPQ   R8, $2
	JLT    hard1store
	JGT    hard1mul
	VDIVSS X12, X1, X1
	JMP    hard1store
hard1mul:
	VMULSS X12, X1, X1
hard1store:
	VMOVSS X1, (DI)(AX*4)
	INCQ   AX
	JMP    hard1

harddone:
	VZEROUPPER
	RET

// func scaleRowsAVX2(dst, s []float32)
//
// For every row r of dst (len(s) values each; len(dst) a multiple of
// len(s) >= 1) and c < len(s), 8 then 1 at a time:
//
//	dst[r·len(s) + c] *= s[c]
//
// Register contract: DI the row, CX values left, SI s, R8 len(s), AX the
// index in the row.
TEXT ·scaleRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), R8
	TESTQ R8, R8
	JZ   scaledone

scalerow:
	CMPQ CX, R8
	JLT  scaledone
	XORQ AX, AX

scale8:
	LEAQ    8(AX), R10
	CMPQ    R10, R8
	JGT     scale1
	VMOVUPS (DI)(AX*4), Y0
	VMULPS  (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     scale8

scale1:
	CMPQ   AX, R8
	JGE    scalenext
	VMOVSS (DI)(AX*4), X0
	VMULSS (SI)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    scale1

scalenext:
	LEAQ (DI)(R8*4), DI
	SUBQ R8, CX
	JMP  scalerow

scaledone:
	VZEROUPPER
	RET

// func poolSumAVX2(x []float32, a *[4]float64)
//
// Sums x (len(x) a multiple of 16) in float64 over sixteen lanes, value i
// to lane i mod 16 in Y0..Y3, then writes a_j = (s_j + s_j+8) + (s_j+4 +
// s_j+12) for j < 4: kernels.PoolSum's lanes, in its order.
TEXT ·poolSumAVX2(SB), NOSPLIT, $0-32
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   a+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

sum16:
	CMPQ      CX, $16
	JLT       sumdone
	VCVTPS2PD (SI), Y4
	VADDPD    Y4, Y0, Y0
	VCVTPS2PD 16(SI), Y5
	VADDPD    Y5, Y1, Y1
	VCVTPS2PD 32(SI), Y6
	VADDPD    Y6, Y2, Y2
	VCVTPS2PD 48(SI), Y7
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, SI
	SUBQ      $16, CX
	JMP       sum16

sumdone:
	VADDPD  Y2, Y0, Y0 // b0..b3 = s0..s3 + s8..s11
	VADDPD  Y3, Y1, Y1 // b4..b7 = s4..s7 + s12..s15
	VADDPD  Y1, Y0, Y0 // a0..a3 = b0..b3 + b4..b7
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET
