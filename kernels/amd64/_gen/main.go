// Command _gen writes vnni_amd64.s: the AVX-512 VNNI, AVX-512 float and
// AVX-VNNI block kernels and their peak loops. Run from kernels/amd64:
//
//	go run ./_gen > vnni_amd64.s
//
// The unrolled register tiles are regular enough that writing them by a
// program beats writing them by hand; AVX-VNNI's VEX-encoded vpdpbusd,
// which Go's assembler does not emit, is encoded here byte by byte.
package main

import (
	"fmt"
	"os"
	"strings"
)

var out strings.Builder

func p(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }

// Field offsets of kernels.QBlock and kernels.FBlock (checked by
// TestBlockLayout).
const (
	qU, qLDU, qRows, qB, qPStr, qNP, qKQ, qFlags = 0, 24, 32, 40, 64, 72, 80, 88
	qAcc, qAccStr, qFSum, qOff, qSA, qColsum     = 96, 120, 128, 152, 176, 200
	qSB, qC, qLDC                                = 224, 248, 272
	qBias, qRes, qLDR, qLo, qHi                  = 536, 560, 584, 592, 596
	fA, fLDA, fRows, fB, fPStr, fNP, fK, fFlags  = 0, 24, 32, 40, 64, 72, 80, 88
	fC, fLDC, fSegs, fSegK                       = 96, 120, 128, 152
	fBias, fRes, fLDR, fLo, fHi, fAhead          = 160, 184, 208, 216, 220, 224
)

// rowRegs hold the row pointers of the tiles; missing rows repeat row 0.
var rowRegs = []string{"SI", "R8", "R9", "R10", "R11", "R12", "R13", "R15"}

// vexDPBUSD returns the VEX.256 encoding of vpdpbusd ymm(acc), ymm(a), ymm(b):
// acc += Σ4 u8(a)·s8(b). C4 [R̄ X̄ B̄ 00010] [W=0 v̄v̄v̄v̄ L=1 pp=01] 50 /r.
func vexDPBUSD(acc, a, b int) string {
	b1 := 0x02
	if acc < 8 {
		b1 |= 0x80
	}
	b1 |= 0x40 // X̄: no index register
	if b < 8 {
		b1 |= 0x20
	}
	b2 := (^a&0xf)<<3 | 0x4 | 0x1
	modrm := 0xc0 | (acc&7)<<3 | b&7
	return fmt.Sprintf("BYTE $0xc4; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x50; BYTE $0x%02x // VPDPBUSD Y%d, Y%d, Y%d (Y%d += Σ4 u8(Y%d)·s8(Y%d))",
		b1, b2, modrm, acc, a, b, acc, a, b)
}

// setRows loads the row pointers: base from off(DI), stride (bytes) in AX,
// the row count in CX; rows past the count repeat row 0.
func setRows(n int, label string) {
	for r := 1; r < n; r++ {
		p("\tMOVQ SI, %s", rowRegs[r])
	}
	for r := 1; r < n; r++ {
		p("\tCMPQ CX, $%d", r+1)
		p("\tJLT  %s", label)
		p("\tLEAQ (%s)(AX*1), %s", rowRegs[r-1], rowRegs[r])
	}
	p("%s:", label)
}

// panels sets BX = panel 0, BX+DI = panel 1, DX = panel 2 from B at
// off(DI), pstr at pstrOff(DI), np at npOff(DI) (destroys DI's struct
// pointer); panels past np repeat panel 0.
func panels(prefix string) {
	p("\tMOVQ %d(DI), AX // np", qNP)
	p("\tMOVQ %d(DI), DX // panel stride", qPStr)
	p("\tMOVQ %d(DI), BX // panel 0", qB)
	p("\tXORQ DI, DI     // panel 1 at BX+DI")
	p("\tCMPQ AX, $2")
	p("\tJLT  %snp1", prefix)
	p("\tMOVQ DX, DI")
	p("%snp1:", prefix)
	p("\tCMPQ AX, $3")
	p("\tJLT  %snp12", prefix)
	p("\tLEAQ (BX)(DX*2), DX // panel 2")
	p("\tJMP  %snpok", prefix)
	p("%snp12:", prefix)
	p("\tMOVQ BX, DX")
	p("%snpok:", prefix)
}

func qBlockVNNI512() {
	p(`// func qBlockVNNI512(q *kernels.QBlock)
//
// Register tile: Z(3r+p) accumulates row r (0-7), panel p (0-2): 16 int32
// columns. Per group of 4 k: three 64-byte loads of B (Z24-Z26, or Z29-Z31
// for the odd group), one vpbroadcastd of each row's 4 activation bytes
// (Z27/Z28), 24 vpdpbusd:
//   acc[r][p] += Σ_{i<4} u[r][4g+i] · b[p][g][col][i]     (exact int32)
// A tile of eight rows writes int32 sums or the per-channel epilogue out
// of its registers (qDirect), finished there with QFinish (its residual
// rows prefetched as the kernel starts); any other goes to the frame and
// the epilogue loop writes it out (the Go wrapper finishes those).
TEXT ·qBlockVNNI512(SB), 0, $1544-8
	MOVQ q+0(FP), DI
	MOVQ %d(DI), AX
	ANDQ $64, AX // QCached
	MOVQ AX, 1536(SP)
	MOVQ %d(DI), SI // row 0
	MOVQ %d(DI), AX // ldu
	MOVQ %d(DI), CX // rows`, qFlags, qU, qLDU, qRows)
	prefetchResidual("v5nores", 32, qFlags, qRes, qLDR, "QFinish")
	setRows(8, "v5rows")
	p("\tMOVQ %d(DI), CX", qKQ)
	panels("v5")
	for i := 0; i < 24; i++ {
		p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	step := func(rows, np, ao, bo int, breg [3]int) {
		loadPanels("VMOVDQU32", np, bo, breg)
		for r := 0; r < rows; r++ {
			a := 27 + r%2
			p("\tVPBROADCASTD %d(%s)(AX*1), Z%d // row %d: u[4g:4g+4] in every lane", ao, rowRegs[r], a, r)
			for pp := 0; pp < np; pp++ {
				p("\tVPDPBUSD Z%d, Z%d, Z%d // acc[%d][%d] += u·b", breg[pp], a, 3*r+pp, r, pp)
			}
		}
	}
	blockLoops("v5", "q", qRows, "v5sums", "two groups of 4 k per iteration", false, false, 1536, step)
	p("v5sums:")
	qDirect()
	p("v5frame:")
	for r := 0; r < 8; r++ {
		for pp := 0; pp < 3; pp++ {
			p("\tVMOVDQU32 Z%d, %d(SP)", 3*r+pp, r*192+pp*64)
		}
	}
	epilogue("v5", 192, 64, true)
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// prefetch asks for the panels' bytes 4 KiB ahead (both lines of a later
// iteration) in a loop that advances 128 bytes per panel. A
// model's layers read their weights from memory once a run, and the
// first row block of a product streams each block of panels as it comes:
// the hardware's prefetchers stop at each 4 KiB page, so the kernel asks
// a page ahead, about a memory latency at the speed tall tiles take the
// lines. At 512 bytes ahead (taller tiles) a product of 49 rows by
// weights from memory (gemm's BenchmarkMatMulColdWeights) took 12-22%
// longer than by weights in the cache; at 4 KiB, 3-10%.
func prefetch(np int) {
	offs := []int{4096, 4160}
	for _, off := range offs {
		p("\tPREFETCHT0 %d(BX)", off)
		if np > 1 {
			p("\tPREFETCHT0 %d(BX)(DI*1)", off)
		}
		if np > 2 {
			p("\tPREFETCHT0 %d(DX)", off)
		}
	}
}

// loadPanels loads the np panels' vectors at byte offset off (panel 0 at
// BX, 1 at BX+DI, 2 at DX) into breg with the move mov.
func loadPanels(mov string, np, off int, breg [3]int) {
	p("\t%s %d(BX), Z%d", mov, off, breg[0])
	if np > 1 {
		p("\t%s %d(BX)(DI*1), Z%d", mov, off, breg[1])
	}
	if np > 2 {
		p("\t%s %d(DX), Z%d", mov, off, breg[2])
	}
}

// epilogue writes the tile in the frame (row r, chunk c at r*rowBytes +
// c*chunk(SP)) out as the flags ask, for r < rows and chunks of np panels.
// zmm: one 64-byte chunk per panel; ymm: two 32-byte chunks.
//
// Registers: DI = q, R9 = r, R10 = byte offset of the chunk in an output
// row, R11 = Acc row, R12 = FSum row, R13 = C row, CX = flags,
// R8 = columns' bytes (np·64).
func epilogue(prefix string, rowBytes, chunk int, zmm bool) {
	v, mov, movi, bc, bcs, xor := "Y", "VMOVUPS", "VMOVDQU", "VPBROADCASTD", "VBROADCASTSS", "VXORPS"
	if zmm {
		v, movi, xor = "Z", "VMOVDQU32", "VPXORD" // VXORPS on zmm would need AVX512DQ
	}
	p(`	MOVQ q+0(FP), DI
	MOVQ %d(DI), CX // flags
	MOVQ %d(DI), R8 // np
	SHLQ $6, R8     // bytes of output per row
	XORQ R9, R9     // r
%serow:
	MOVQ %d(DI), AX
	IMULQ R9, AX    // r·AccStr
	MOVQ %d(DI), R11
	LEAQ (R11)(AX*4), R11
	MOVQ %d(DI), R12
	LEAQ (R12)(AX*4), R12
	MOVQ %d(DI), AX
	IMULQ R9, AX    // r·LDC
	MOVQ %d(DI), R13
	LEAQ (R13)(AX*4), R13
	MOVQ R9, BX
	IMULQ $%d, BX   // the frame's row
	XORQ R10, R10
%sechunk:
	LEAQ (BX)(R10*1), DX
	%s (SP)(DX*1), %s0
	TESTQ $%d, CX
	JZ    %snoload
	VPADDD (R11)(R10*1), %s0, %s0 // s += Acc
%snoload:
	TESTQ $%d, CX
	JNZ   %schan
	TESTQ $%d, CX
	JNZ   %sblock
	%s %s0, (R11)(R10*1) // Acc = s
	JMP   %snext
%schan: // c = float32(s + off·colsum) · sa · sb
	MOVQ %d(DI), AX
	%s (AX)(R9*4), %s1
	MOVQ %d(DI), AX
	VPMULLD (AX)(R10*1), %s1, %s1
	VPADDD %s1, %s0, %s0
	VCVTDQ2PS %s0, %s0
	MOVQ %d(DI), AX
	%s (AX)(R9*4), %s1
	VMULPS %s1, %s0, %s0
	MOVQ %d(DI), AX
	VMULPS (AX)(R10*1), %s0, %s0
	%s %s0, (R13)(R10*1)
	JMP   %snext
%sblock: // t = float32(s + off·colsum) · sb; f = (fsum or 0) + t
	MOVQ %d(DI), AX
	%s (AX)(R9*4), %s1
	MOVQ %d(DI), AX
	VPMULLD (AX)(R10*1), %s1, %s1
	VPADDD %s1, %s0, %s0
	VCVTDQ2PS %s0, %s0
	MOVQ %d(DI), AX
	VMULPS (AX)(R10*1), %s0, %s0
	%s %s2, %s2, %s2
	TESTQ $%d, CX
	JZ    %snosum
	%s (R12)(R10*1), %s2
%snosum:
	VADDPS %s0, %s2, %s2
	TESTQ $%d, CX
	JZ    %skeep
	MOVQ %d(DI), AX
	%s (AX)(R9*4), %s1
	VMULPS %s2, %s1, %s2 // c = sa · f
	%s %s2, (R13)(R10*1)
	JMP   %snext
%skeep:
	%s %s2, (R12)(R10*1) // fsum = f
%snext:
	ADDQ $%d, R10
	CMPQ R10, R8
	JLT  %sechunk
	INCQ R9
	CMPQ R9, %d(DI)
	JLT  %serow`,
		qFlags, qNP, prefix, qAccStr, qAcc, qFSum, qLDC, qC, rowBytes, prefix,
		movi, v, 1, prefix, v, v, prefix,
		2, prefix, 4, prefix, movi, v, prefix,
		prefix, qOff, bc, v, qColsum, v, v, v, v, v, v, v, qSA, bcs, v, v, v, v, qSB, v, v, mov, v, prefix,
		prefix, qOff, bc, v, qColsum, v, v, v, v, v, v, v, qSB, v, v, xor, v, v, v, 8, prefix, mov, v, prefix, v, v, v,
		16, prefix, qSA, bcs, v, v, v, v, mov, v, prefix,
		prefix, mov, v, prefix,
		chunk, prefix, qRows, prefix)
	_ = fmt.Sprint
}

func fBlockAVX512() {
	p(`// func fBlockAVX512(f *kernels.FBlock)
//
// Register tile: Z(3r+p) holds c[r][panel p] for rows 0-7, panels 0-2.
// Per k: three 64-byte loads of B, one vbroadcastss of each row's a[r][k],
// 24 fused multiply-adds in k order:
//   c[r][p] = fma(a[r][k], b[p][k][0:16], c[r][p])
// K runs as segments (FBlock.Segs, or one of K columns at the rows'
// start): R14 walks their offsets, each sets the rows' byte offset AX.
// Frame: the tile (0-1535), past the last segment (1536), the columns of
// a segment (1544), the one offset 0 of a block without Segs (1552); the
// next line of Ahead to draw (1560), the segment pointer while a loop
// draws them (1568), the last line (1576), FCached (1584), no Ahead to
// draw (1592, noAheadSlot).
TEXT ·fBlockAVX512(SB), 0, $1600-8
	MOVQ f+0(FP), DI`)
	prefetchResidual("f5nores", 2, fFlags, fRes, fLDR, "FFinish")
	// initial sums: zero, or C's values (copied through the frame); the
	// copy uses the registers that hold the row pointers below
	for i := 0; i < 24; i++ {
		p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("\tTESTQ $1, %d(DI)", fFlags)
	p("\tJZ    f5init")
	// A tile of eight rows loads C's rows straight into its registers.
	p("\tCMPQ %d(DI), $8", fRows)
	p("\tJNE  f5lframe")
	fDirect("l", func(r, pp int) { p("\tVMOVUPS %d(R10), Z%d", pp*64, 3*r+pp) }, "")
	p("\tJMP  f5init")
	p(`f5lframe:
	// frame = 0, then C's rows and panels into it
	VPXORD Z0, Z0, Z0`)
	for i := 0; i < 24; i++ {
		p("\tVMOVUPS Z0, %d(SP)", i*64)
	}
	p(`	MOVQ %d(DI), R8
	SHLQ $6, R8     // bytes per output row
	XORQ R9, R9
f5lrow:
	MOVQ %d(DI), AX
	IMULQ R9, AX
	MOVQ %d(DI), R13
	LEAQ (R13)(AX*4), R13
	MOVQ R9, BX
	IMULQ $192, BX
	XORQ R10, R10
f5lchunk:
	LEAQ (BX)(R10*1), DX
	VMOVUPS (R13)(R10*1), Z0
	VMOVUPS Z0, (SP)(DX*1)
	ADDQ $64, R10
	CMPQ R10, R8
	JLT  f5lchunk
	INCQ R9
	CMPQ R9, %d(DI)
	JLT  f5lrow`, fNP, fLDC, fC, fRows)
	for i := 0; i < 24; i++ {
		p("\tVMOVUPS %d(SP), Z%d", i*64, i)
	}
	p("f5init:")
	// Ahead's lines: from its first to its last; none (nil) draws B's
	// first line, in the cache already.
	p("\tMOVQ %d(DI), AX // Ahead", fAhead)
	p("\tMOVQ %d(DI), CX // len(Ahead)", fAhead+8)
	p("\tMOVQ $0, %d(SP)", noAheadSlot)
	p("\tSUBQ $16, CX")
	p("\tJGE  f5ahead")
	p("\tMOVQ $1, %d(SP)", noAheadSlot)
	p("\tMOVQ %d(DI), AX // B", fB)
	p("\tXORQ CX, CX")
	p("f5ahead:")
	p("\tMOVQ AX, 1560(SP)")
	p("\tLEAQ (AX)(CX*4), AX")
	p("\tMOVQ AX, 1576(SP)")
	p("\tMOVQ %d(DI), AX", fFlags)
	p("\tANDQ $4, AX // FCached")
	p("\tMOVQ AX, 1584(SP)")
	// K's segments: Segs, or one at 0 of K columns (a zero in the frame)
	p("\tMOVQ %d(DI), CX // len(Segs)", fSegs+8)
	p("\tTESTQ CX, CX")
	p("\tJNZ  f5segs")
	p("\tMOVQ $0, 1552(SP)")
	p("\tMOVQ %d(DI), AX", fK)
	p("\tMOVQ AX, 1544(SP)")
	p("\tLEAQ 1552(SP), R14")
	p("\tLEAQ 1560(SP), AX")
	p("\tMOVQ AX, 1536(SP)")
	p("\tJMP  f5segok")
	p("f5segs:")
	p("\tMOVQ %d(DI), R14 // &Segs[0]", fSegs)
	p("\tLEAQ (R14)(CX*8), AX")
	p("\tMOVQ AX, 1536(SP) // past the last")
	p("\tMOVQ %d(DI), AX", fSegK)
	p("\tMOVQ AX, 1544(SP) // SegK")
	p("f5segok:")
	p("\tMOVQ %d(DI), SI // row 0", fA)
	p("\tMOVQ %d(DI), AX", fLDA)
	p("\tSHLQ $2, AX     // lda in bytes")
	p("\tMOVQ %d(DI), CX // rows", fRows)
	setRows(8, "f5rows")
	p("\tMOVQ %d(DI), CX // k", fK)
	panelsF()
	step := func(rows, np, ao, bo int, breg [3]int) {
		loadPanels("VMOVUPS", np, bo, breg)
		for r := 0; r < rows; r++ {
			a := 27 + r%2
			p("\tVBROADCASTSS %d(%s)(AX*1), Z%d // a[%d][k]", ao, rowRegs[r], a, r)
			for pp := 0; pp < np; pp++ {
				p("\tVFMADD231PS Z%d, Z%d, Z%d // c[%d][%d] += a·b", breg[pp], a, 3*r+pp, r, pp)
			}
		}
	}
	blockLoops("f5", "f", fRows, "f5store", "two k per iteration", true, true, 1584, step)
	p("f5store:")
	// A tile of eight rows stores its registers straight into C's rows.
	p("\tMOVQ f+0(FP), DI")
	p("\tCMPQ %d(DI), $8", fRows)
	p("\tJNE  f5sframe")
	p("\tTESTQ $2, %d(DI) // FFinish", fFlags)
	p("\tJNZ  f5fin")
	fDirect("s", func(r, pp int) { p("\tVMOVUPS Z%d, %d(R10)", 3*r+pp, pp*64) }, "")
	p("\tVZEROUPPER")
	p("\tRET")
	// The finish: + bias, + the residual's row, clamped to [lo, hi] as
	// ConvFinish clamps, then stored.
	p("f5fin:")
	loadFinish(fBias, fLo, fHi, fRes, fLDR)
	finish := func(res bool) func(r, pp int) {
		return func(r, pp int) {
			finishVector(3*r+pp, pp, res)
			p("\tVMOVUPS Z%d, %d(R10)", 3*r+pp, pp*64)
		}
	}
	p("\tTESTQ DX, DX")
	p("\tJZ   f5finb")
	fDirect("r", finish(true), "\tADDQ R8, DX")
	p("\tVZEROUPPER")
	p("\tRET")
	p("f5finb:")
	fDirect("b", finish(false), "")
	p("\tVZEROUPPER")
	p("\tRET")
	p("f5sframe:")
	for i := 0; i < 24; i++ {
		p("\tVMOVUPS Z%d, %d(SP)", i, i*64)
	}
	p(`	MOVQ f+0(FP), DI
	MOVQ %d(DI), R8
	SHLQ $6, R8
	XORQ R9, R9
f5srow:
	MOVQ %d(DI), AX
	IMULQ R9, AX
	MOVQ %d(DI), R13
	LEAQ (R13)(AX*4), R13
	MOVQ R9, BX
	IMULQ $192, BX
	XORQ R10, R10
f5schunk:
	LEAQ (BX)(R10*1), DX
	VMOVUPS (SP)(DX*1), Z0
	VMOVUPS Z0, (R13)(R10*1)
	ADDQ $64, R10
	CMPQ R10, R8
	JLT  f5schunk
	INCQ R9
	CMPQ R9, %d(DI)
	JLT  f5srow
	VZEROUPPER
	RET
`, fNP, fLDC, fC, fRows)
}

// fDirect writes, for an FBlock of eight rows at DI, move(r, p) for each
// row r and each of its np panels p with R10 at row r of C (rows LDC
// apart), branching on np, and the instruction next (if any) as it moves
// on to the next row; each branch ends at f5<what>done. It uses R10 and
// R11.
func fDirect(what string, move func(r, pp int), next string) {
	done := "f5" + what + "done"
	p("\tMOVQ %d(DI), R10 // C", fC)
	p("\tMOVQ %d(DI), R11", fLDC)
	p("\tSHLQ $2, R11     // ldc in bytes")
	p("\tCMPQ %d(DI), $2", fNP)
	p("\tJLT  f5%s1", what)
	p("\tJEQ  f5%s2", what)
	for _, np := range []int{3, 2, 1} {
		p("f5%s%d:", what, np)
		for r := 0; r < 8; r++ {
			for pp := 0; pp < np; pp++ {
				move(r, pp)
			}
			if r < 7 {
				p("\tADDQ R11, R10")
				if next != "" {
					p("%s", next)
				}
			}
		}
		p("\tJMP  %s", done)
	}
	p("%s:", done)
}

// panelsF is panels for an FBlock (stride in elements).
func panelsF() {
	p("\tMOVQ %d(DI), AX // np", fNP)
	p("\tMOVQ %d(DI), DX", fPStr)
	p("\tSHLQ $2, DX     // panel stride in bytes")
	p("\tMOVQ %d(DI), BX // panel 0", fB)
	p("\tXORQ DI, DI     // panel 1 at BX+DI")
	p("\tCMPQ AX, $2")
	p("\tJLT  f5np1")
	p("\tMOVQ DX, DI")
	p("f5np1:")
	p("\tCMPQ AX, $3")
	p("\tJLT  f5np12")
	p("\tLEAQ (BX)(DX*2), DX // panel 2")
	p("\tJMP  f5npok")
	p("f5np12:")
	p("\tMOVQ BX, DX")
	p("f5npok:")
}

func qBlockAVXVNNI() {
	p(`// func qBlockAVXVNNI(q *kernels.QBlock)
//
// AVX-VNNI is the VEX (ymm) form of vpdpbusd, on CPUs with no AVX-512.
// Go's assembler knows vpdpbusd only in its EVEX form, which needs
// AVX512VL and AVX512_VNNI and faults on these CPUs, so each one below is
// the VEX encoding spelled out in BYTE directives, the instruction in the
// comment beside it.
//
// Register tile: Y(2r), Y(2r+1) accumulate row r (0-5), columns 0-7 and
// 8-15 of the panel. Per group of 4 k: two 32-byte loads of B (Y12, Y13),
// one vpbroadcastd of each row's 4 activation bytes (Y14/Y15), 12 vpdpbusd.
TEXT ·qBlockAVXVNNI(SB), 0, $384-8
	MOVQ q+0(FP), DI
	MOVQ %d(DI), SI // row 0
	MOVQ %d(DI), AX // ldu
	MOVQ %d(DI), CX // rows`, qU, qLDU, qRows)
	setRows(6, "vyrows")
	p("\tMOVQ %d(DI), CX // groups", qKQ)
	p("\tMOVQ %d(DI), BX // the panel", qB)
	p("\tXORQ AX, AX")
	for i := 0; i < 12; i++ {
		p("\tVPXOR Y%d, Y%d, Y%d", i, i, i)
	}
	p("\tTESTQ CX, CX")
	p("\tJZ    vysums")
	p("vyloop:")
	p("\tPREFETCHT0 512(BX)")
	p("\tVMOVDQU (BX), Y12   // b[g][0:8][0:4]")
	p("\tVMOVDQU 32(BX), Y13 // b[g][8:16][0:4]")
	for r := 0; r < 6; r++ {
		a := 14 + r%2
		p("\tVPBROADCASTD (%s)(AX*1), Y%d // row %d: u[4g:4g+4]", rowRegs[r], a, r)
		p("\t" + vexDPBUSD(2*r, a, 12))
		p("\t" + vexDPBUSD(2*r+1, a, 13))
	}
	p("\tADDQ $4, AX")
	p("\tADDQ $64, BX")
	p("\tDECQ CX")
	p("\tJNZ  vyloop")
	p("vysums:")
	for i := 0; i < 12; i++ {
		p("\tVMOVDQU Y%d, %d(SP)", i, i*32)
	}
	epilogue("vy", 64, 32, false)
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

func peaks() {
	p(`// Register-only ceilings of the tables, for the benchmark.

// func peakVNNI512(iters int) int32
TEXT ·peakVNNI512(SB), NOSPLIT, $0-12
	MOVQ iters+0(FP), CX
	VPTERNLOGD $0xff, Z30, Z30, Z30 // all ones
	VPABSB     Z30, Z31             // u8 operand: 1 in every byte
	VMOVDQU32  Z31, Z30             // s8 operand`)
	for i := 0; i < 24; i++ {
		p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("pv5loop: // 24 chains × 64 multiply-adds")
	for i := 0; i < 24; i++ {
		p("\tVPDPBUSD Z30, Z31, Z%d", i)
	}
	p("\tDECQ CX")
	p("\tJNZ  pv5loop")
	for i := 1; i < 24; i++ {
		p("\tVPADDD Z%d, Z0, Z0", i)
	}
	p(`	VMOVD  X0, AX
	MOVL   AX, ret+8(FP)
	VZEROUPPER
	RET

// func peakAVXVNNI(iters int) int32
TEXT ·peakAVXVNNI(SB), NOSPLIT, $0-12
	MOVQ     iters+0(FP), CX
	VPCMPEQB Y15, Y15, Y15
	VPABSB   Y15, Y14        // u8 operand: 1 in every byte
	VMOVDQA  Y14, Y13        // s8 operand`)
	for i := 0; i < 12; i++ {
		p("\tVPXOR Y%d, Y%d, Y%d", i, i, i)
	}
	p("pvyloop: // 12 chains × 32 multiply-adds")
	for i := 0; i < 12; i++ {
		p("\t" + vexDPBUSD(i, 14, 13))
	}
	p("\tDECQ CX")
	p("\tJNZ  pvyloop")
	for i := 1; i < 12; i++ {
		p("\tVPADDD Y%d, Y0, Y0", i)
	}
	p(`	VMOVD  X0, AX
	MOVL   AX, ret+8(FP)
	VZEROUPPER
	RET

// func peakF32Zmm(iters int) float32
TEXT ·peakF32Zmm(SB), NOSPLIT, $0-12
	MOVQ         iters+0(FP), CX
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z30          // 1.0
	VMOVUPS      Z30, Z31`)
	for i := 0; i < 24; i++ {
		p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("pf5loop: // 24 chains × 32 flops")
	for i := 0; i < 24; i++ {
		p("\tVFMADD231PS Z30, Z31, Z%d", i)
	}
	p("\tDECQ CX")
	p("\tJNZ  pf5loop")
	for i := 1; i < 24; i++ {
		p("\tVADDPS Z%d, Z0, Z0", i)
	}
	p(`	VMOVSS X0, ret+8(FP)
	VZEROUPPER
	RET

// func xgetbv0() uint64
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	XORL CX, CX
	XGETBV
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET`)
}

func main() {
	p("// Code generated by go run ./_gen; DO NOT EDIT.")
	p("")
	p("//go:build gc && !purego")
	p("")
	p(`#include "textflag.h"`)
	p("")
	qBlockVNNI512()
	fBlockAVX512()
	qBlockAVXVNNI()
	qBlockAMX()
	peakAMX()
	peaks()
	os.Stdout.WriteString(out.String())
}
