package main

import "fmt"

// qDirect writes the sums of a tile of eight rows out of its registers
// when the flags ask for int32 sums (Acc = s, after adding Acc with
// QLoadAcc) or the per-channel epilogue (QOutChannel:
// c = float32(s + off·colsum) · sa · sb, left to right, as QStore), for
// each panel count; any other tile, and the per-block epilogue, go on to
// v5frame.
//
// Registers: DI = q, CX = flags, R10 = C row, R11 = LDC bytes, R12 = Off,
// R13 = SA, R14 = Colsum, R15 = SB, AX = Acc row, BX = AccStr bytes;
// Z30 = off, Z31 = sa of the row, Z27 a product.
func qDirect() {
	p("\tMOVQ q+0(FP), DI")
	p("\tCMPQ %d(DI), $8", qRows)
	p("\tJNE  v5frame")
	p("\tMOVQ %d(DI), CX // flags", qFlags)
	p("\tTESTQ $%d, CX", 4) // QOutBlock
	p("\tJNZ  v5frame")
	p("\tMOVQ %d(DI), AX // Acc", qAcc)
	p("\tMOVQ %d(DI), BX", qAccStr)
	p("\tSHLQ $2, BX     // AccStr in bytes")
	p("\tCMPQ %d(DI), $2", qNP)
	p("\tJLT  v5d1")
	p("\tJEQ  v5d2")
	for _, np := range []int{3, 2, 1} {
		l := fmt.Sprintf("v5d%d", np)
		p("%s: // %d panels", l, np)
		p("\tTESTQ $1, CX // QLoadAcc")
		p("\tJZ   %sout", l)
		p("\tMOVQ AX, R10")
		for r := 0; r < 8; r++ {
			for pp := 0; pp < np; pp++ {
				p("\tVPADDD %d(R10), Z%d, Z%d", pp*64, 3*r+pp, 3*r+pp)
			}
			if r < 7 {
				p("\tADDQ BX, R10")
			}
		}
		p("%sout:", l)
		p("\tTESTQ $2, CX // QOutChannel")
		p("\tJNZ  %sch", l)
		for r := 0; r < 8; r++ { // Acc = s
			for pp := 0; pp < np; pp++ {
				p("\tVMOVDQU32 Z%d, %d(AX)", 3*r+pp, pp*64)
			}
			if r < 7 {
				p("\tADDQ BX, AX")
			}
		}
		p("\tJMP  v5ddone")
		p("%sch:", l)
		p("\tMOVQ %d(DI), R10 // C", qC)
		p("\tMOVQ %d(DI), R11", qLDC)
		p("\tSHLQ $2, R11     // LDC in bytes")
		p("\tMOVQ %d(DI), R12 // Off", qOff)
		p("\tMOVQ %d(DI), R13 // SA", qSA)
		p("\tMOVQ %d(DI), R14 // Colsum", qColsum)
		p("\tMOVQ %d(DI), R15 // SB", qSB)
		// The finish (QFinish), residual or not, or none: three loops.
		p("\tTESTQ $%d, CX // QFinish", 32)
		p("\tJZ   %splain", l)
		loadFinish(qBias, qLo, qHi, qRes, qLDR)
		p("\tTESTQ DX, DX")
		p("\tJZ   %sbias", l)
		qChannelRows(np, true, true)
		p("\tJMP  v5ddone")
		p("%sbias:", l)
		qChannelRows(np, true, false)
		p("\tJMP  v5ddone")
		p("%splain:", l)
		qChannelRows(np, false, false)
		p("\tJMP  v5ddone")
	}
	p("v5ddone:")
	p("\tVZEROUPPER")
	p("\tRET")
}

// qChannelRows writes the per-channel outputs of the eight rows' np
// panels, c = float32(s + off·colsum)·sa·sb, to C at R10 (rows LDC bytes
// apart in R11), from Off, SA, Colsum and SB at R12-R15; with finish,
// then finished (finishVector; the residual's rows LDR bytes apart in R8)
// with res or without: the same operations in the same order as
// QStoreRow and ConvFinish, so the same bits.
func qChannelRows(np int, finish, res bool) {
	for r := 0; r < 8; r++ {
		p("\tVPBROADCASTD %d(R12), Z30 // off[%d]", 4*r, r)
		p("\tVBROADCASTSS %d(R13), Z31 // sa[%d]", 4*r, r)
		for pp := 0; pp < np; pp++ {
			z := 3*r + pp
			p("\tVPMULLD %d(R14), Z30, Z27 // off·colsum", pp*64)
			p("\tVPADDD Z27, Z%d, Z%d", z, z)
			p("\tVCVTDQ2PS Z%d, Z%d", z, z)
			p("\tVMULPS Z31, Z%d, Z%d // · sa", z, z)
			p("\tVMULPS %d(R15), Z%d, Z%d // · sb", pp*64, z, z)
			if finish {
				finishVector(z, pp, res)
			}
			p("\tVMOVUPS Z%d, %d(R10)", z, pp*64)
		}
		if r < 7 {
			p("\tADDQ R11, R10")
			if res {
				p("\tADDQ R8, DX")
			}
		}
	}
}
