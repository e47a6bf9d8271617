package main

import "fmt"

// The AMX tile kernel. Go's assembler has no AMX instructions, so each is
// its VEX encoding in BYTE directives, the instruction in the comment
// beside it. Tiles: C(row tile t, panel p) is tmm(2t+p), A(t) tmm(4+t),
// B(p) tmm(6+p).

// gpr numbers the general registers as the encodings do.
var gpr = map[string]int{
	"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15,
}

// vexAMX returns the BYTE directives of a three-byte-VEX AMX instruction
// in map 0F38 (W0, L0): C4 [R̄ X̄ B̄ 00010] [0 v̄v̄v̄v̄ 0 pp] op rest...,
// with index and base the registers whose high bits X̄ and B̄ carry.
func vexAMX(comment string, index, base, vvvv, pp, op int, rest ...int) string {
	b1 := 0x80 | 0x02 // R̄: tmm numbers need no extension
	if index < 8 {
		b1 |= 0x40
	}
	if base < 8 {
		b1 |= 0x20
	}
	bs := []int{0xc4, b1, (^vvvv&0xf)<<3 | pp, op}
	bs = append(bs, rest...)
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("BYTE $0x%02x", b)
	}
	return s + " // " + comment
}

// sibOperand checks that base and index can be encoded as (base)(index*1)
// with no displacement: base not SP, BP, R12 or R13, index not SP.
func sibOperand(base, index string) (int, int) {
	b, i := gpr[base], gpr[index]
	if b&7 == 4 || b&7 == 5 || i == 4 {
		panic("amx: operand (" + base + ")(" + index + "*1) needs another encoding")
	}
	return b, i
}

// tileLoad returns tileloadd tmm(t), (base)(index*1): 16 or fewer rows of
// the tile, index bytes apart.
func tileLoad(t int, base, index string) string {
	b, i := sibOperand(base, index)
	return vexAMX(fmt.Sprintf("TILELOADD (%s)(%s*1), TMM%d", base, index, t), i, b, 0, 3, 0x4b, t<<3|4, (i&7)<<3|b&7)
}

// tileStore returns tilestored tmm(t), (base)(index*1).
func tileStore(t int, base, index string) string {
	b, i := sibOperand(base, index)
	return vexAMX(fmt.Sprintf("TILESTORED TMM%d, (%s)(%s*1)", t, base, index), i, b, 0, 2, 0x4b, t<<3|4, (i&7)<<3|b&7)
}

// tileZero returns tilezero tmm(t).
func tileZero(t int) string {
	return vexAMX(fmt.Sprintf("TILEZERO TMM%d", t), 0, 0, 0, 3, 0x49, 0xc0|t<<3)
}

// tdpbusd returns tdpbusd tmm(c), tmm(a), tmm(b): c[m][n] += Σ_k Σ_{i<4}
// u8(a[m][4k+i]) · s8(b[k][4n+i]) in exact int32.
func tdpbusd(c, a, b int) string {
	return vexAMX(fmt.Sprintf("TDPBUSD TMM%d, TMM%d, TMM%d (TMM%d += u8(TMM%d)·s8(TMM%d))", c, a, b, c, a, b), 0, 0, b, 1, 0x5e, 0xc0|c<<3|a)
}

// ldtilecfg returns ldtilecfg disp(base): the tiles' shapes from the 64
// bytes there.
func ldtilecfg(disp int, base string) string {
	b := gpr[base]
	if b&7 == 4 || b&7 == 5 || disp < 0 || disp > 127 {
		panic("amx: ldtilecfg operand needs another encoding")
	}
	if disp == 0 {
		return vexAMX(fmt.Sprintf("LDTILECFG (%s)", base), 0, b, 0, 0, 0x49, b&7)
	}
	return vexAMX(fmt.Sprintf("LDTILECFG %d(%s)", disp, base), 0, b, 0, 0, 0x49, 0x40|b&7, disp)
}

// tilerelease returns tilerelease: the tiles back to their initial state,
// so the thread's context switches save none of them.
func tilerelease() string {
	return vexAMX("TILERELEASE", 0, 0, 0, 0, 0x49, 0xc0)
}

// The frame of qBlockAMX: up to amxRows rows of two panels' int32 sums,
// amxRowBytes a row, as the epilogue reads them; then the spills.
const (
	amxRows                             = 96
	amxRowBytes                         = 128
	amxSums                             = amxRows * amxRowBytes
	amxSpillRows, amxSpillNP, amxSpillA = amxSums, amxSums + 8, amxSums + 16
	amxFrame                            = amxSums + 24
)

func qBlockAMX() {
	p(`// func qBlockAMX(q *kernels.QBlock, cfg *amxConfigs)
//
// The block's rows run as groups of 32 (the last may be shorter), each a
// pass over K. Tiles: C(t, p) = TMM(2t+p) sums rows 16t.. of the group,
// panel p (16 int32 columns); A(t) = TMM(4+t) holds those rows' activation
// bytes of a step (64 k), LDU apart; B(p) = TMM(6+p) panel p's bytes of
// the step, 16 groups of 64, which is the panel's layout. Per step, 2-4
// tile loads and 1-4 tdpbusd:
//   C(t, p)[m][n] += Σ_g Σ_{i<4} u[16t+m][4g+i] · b[p][g][n][i]  (exact int32)
// cfg holds the shapes of a group of 32 rows (a step of 16 groups of 4 k,
// then the last, shorter step) at 0 and 64, and of the last group at 128
// and 192; ldtilecfg, which costs as much as several steps, runs only
// when the shape changes. DI holds the configuration loaded (0: none).
// The sums go to the frame (row r at r·128, panel p at p·64), the tiles
// are released, and the epilogue loop writes them out as the flags ask,
// finished with QFinish (amxChannel; the generic epilogue for the rest).
TEXT ·qBlockAMX(SB), 0, $%d-16
	MOVQ q+0(FP), DI
	MOVQ %d(DI), R13 // rows left
	MOVQ %d(DI), AX
	MOVQ AX, %d(SP) // the group's A
	MOVQ cfg+8(FP), R14
	MOVQ $64, R9    // B's row stride
	MOVQ $%d, R11   // the frame's row stride
	XORQ R12, R12   // the group's offset in the frame
	XORQ DI, DI     // no configuration loaded
amxgroup:
	MOVQ R14, R15   // a group of 32 rows
	CMPQ R13, $32
	JGE  amxgcfg
	LEAQ 128(R14), R15 // the last, shorter group
amxgcfg:
	CMPQ DI, R15
	JEQ  amxgload`, amxFrame, qRows, qU, amxSpillA, amxRowBytes)
	p("\t" + ldtilecfg(0, "R15"))
	p(`	MOVQ R15, DI
amxgload:
	MOVQ q+0(FP), R10
	MOVQ %d(SP), SI // A(0): the group's row 0
	MOVQ %d(R10), AX // ldu
	MOVQ AX, R8
	SHLQ $4, R8
	ADDQ SI, R8     // A(1): its row 16
	MOVQ %d(R10), BX // B(0): panel 0
	MOVQ %d(R10), DX
	ADDQ BX, DX     // B(1): panel 1
	MOVQ %d(R10), CX
	SHRQ $4, CX     // full steps
	CMPQ %d(R10), $2 // np
	JEQ  amxnp2
	CMPQ R13, $16
	JGT  amxt2p1
	JMP  amxt1p1
amxnp2:
	CMPQ R13, $16
	JGT  amxt2p2
	JMP  amxt1p2`, amxSpillA, qLDU, qB, qPStr, qKQ, qNP)
	for _, rt := range []int{1, 2} {
		for _, np := range []int{1, 2} {
			amxTile(rt, np)
		}
	}
	p(`amxgnext:
	ADDQ $%d, R12   // 32 rows of the frame
	MOVQ q+0(FP), R10
	MOVQ %d(R10), AX
	SHLQ $5, AX
	ADDQ AX, %d(SP) // 32 rows of A
	SUBQ $32, R13
	JG   amxgroup`, 32*amxRowBytes, qLDU, amxSpillA)
	p("\t" + tilerelease())
	amxChannel()
	p("amxgeneric:")
	epilogue("amx", amxRowBytes, 64, true)
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// amxTile writes the K loop of a group of rt row tiles and np panels,
// ending with its sums in the frame and a jump to amxgnext.
func amxTile(rt, np int) {
	pre := fmt.Sprintf("amxt%dp%d", rt, np)
	p("%s: // %d row tiles, %d panels", pre, rt, np)
	aReg := []string{"SI", "R8"}
	bReg := []string{"BX", "DX"}
	each := func(f func(t, pp int)) {
		for t := 0; t < rt; t++ {
			for pp := 0; pp < np; pp++ {
				f(t, pp)
			}
		}
	}
	// The frame's address of C(t, p) in the group, in R10.
	frame := func(t, pp int) {
		p("\tLEAQ %d(SP)(R12*1), R10", t*16*amxRowBytes+pp*64)
	}
	step := func() {
		for t := 0; t < rt; t++ {
			p("\t" + tileLoad(4+t, aReg[t], "AX"))
		}
		for pp := 0; pp < np; pp++ {
			p("\t" + tileLoad(6+pp, bReg[pp], "R9"))
		}
		each(func(t, pp int) { p("\t" + tdpbusd(2*t+pp, 4+t, 6+pp)) })
	}
	each(func(t, pp int) { p("\t" + tileZero(2*t+pp)) })
	p("\tTESTQ CX, CX")
	p("\tJZ    %stail", pre)
	p("%sloop: // a step of 64 k", pre)
	step()
	for t := 0; t < rt; t++ {
		p("\tADDQ $64, %s", aReg[t])
	}
	for pp := 0; pp < np; pp++ {
		p("\tADDQ $1024, %s", bReg[pp])
	}
	p("\tDECQ CX")
	p("\tJNZ  %sloop", pre)
	p("%stail: // the last groups of 4 k, fewer than 16: their own shapes", pre)
	p("\tMOVQ q+0(FP), CX")
	p("\tMOVQ %d(CX), CX", qKQ)
	p("\tANDQ $15, CX")
	p("\tJZ   %sstore", pre)
	each(func(t, pp int) {
		frame(t, pp)
		p("\t" + tileStore(2*t+pp, "R10", "R11"))
	})
	p("\t" + ldtilecfg(64, "R15"))
	p("\tLEAQ 64(R15), DI")
	each(func(t, pp int) {
		frame(t, pp)
		p("\t" + tileLoad(2*t+pp, "R10", "R11"))
	})
	step()
	p("%sstore:", pre)
	each(func(t, pp int) {
		frame(t, pp)
		p("\t" + tileStore(2*t+pp, "R10", "R11"))
	})
	p("\tJMP  amxgnext")
}

// amxChannel writes the per-channel epilogue of the sums in the frame,
// QFinish included, for blocks whose flags are QOutChannel (with or
// without QLoadAcc and QFinish): c = float32(s + off·colsum) · sa · sb,
// left to right, as QStore, then + bias, + the residual's row, clamped
// to [lo, hi] as ConvFinish; any other flags go on to amxgeneric.
//
// Registers: CX = flags, DI = the frame's row, R9 = r, AX = Acc row,
// BX = AccStr bytes, R10 = C row, R11 = LDC bytes, R12 = Off, R13 = SA,
// R14 = Colsum, R15 = SB, SI = Bias, DX = Res row (nil: none), R8 = LDR
// bytes; Z2-Z3 the panels' colsum, Z4-Z5 sb, Z6-Z7 bias, Z8 the row's
// off, Z9 its sa, Z28-Z29 lo and hi; the frame holds rows and np at
// amxSpillRows and amxSpillNP.
func amxChannel() {
	p(`	MOVQ q+0(FP), DI
	MOVQ %d(DI), CX // flags
	TESTQ $%d, CX   // QOutBlock
	JNZ  amxgeneric
	TESTQ $%d, CX   // QOutChannel
	JZ   amxgeneric
	MOVQ %d(DI), AX
	MOVQ AX, %d(SP) // rows
	MOVQ %d(DI), AX
	MOVQ AX, %d(SP) // np
	MOVQ %d(DI), AX // Acc
	MOVQ %d(DI), BX
	SHLQ $2, BX     // AccStr in bytes
	MOVQ %d(DI), R10 // C
	MOVQ %d(DI), R11
	SHLQ $2, R11    // LDC in bytes
	MOVQ %d(DI), R12 // Off
	MOVQ %d(DI), R13 // SA
	MOVQ %d(DI), R14 // Colsum
	MOVQ %d(DI), R15 // SB`,
		qFlags, 4, 2, qRows, amxSpillRows, qNP, amxSpillNP, qAcc, qAccStr, qC, qLDC, qOff, qSA, qColsum, qSB)
	loadFinish(qBias, qLo, qHi, qRes, qLDR)
	p(`	TESTQ DX, DX
	JNZ  amxcres
	XORQ R8, R8     // no residual: its row stays nil
amxcres:
	VMOVDQU32 (R14), Z2 // colsum, sb and (QFinish) bias of panel 0
	VMOVUPS (R15), Z4
	TESTQ $32, CX
	JZ   amxcnob0
	VMOVUPS (SI), Z6
amxcnob0:
	CMPQ %d(SP), $2
	JLT  amxconly1
	VMOVDQU32 64(R14), Z3 // and of panel 1
	VMOVUPS 64(R15), Z5
	TESTQ $32, CX
	JZ   amxcnob1
	VMOVUPS 64(SI), Z7
amxcnob1:`, amxSpillNP)
	// One loop for each panel count and finish: none, bias, bias and
	// residual.
	for _, np := range []int{2, 1} {
		if np == 1 {
			p("amxconly1:")
		}
		p("\tTESTQ $32, CX // QFinish")
		p("\tJZ   amxc%dplain", np)
		p("\tTESTQ DX, DX")
		p("\tJZ   amxc%dbias", np)
		for _, fin := range []string{"res", "bias", "plain"} {
			l := fmt.Sprintf("amxc%d%s", np, fin)
			p("%s: // %d panels, finish: %s", l, np, fin)
			p("\tXORQ R9, R9")
			p("\tLEAQ 0(SP), DI")
			p("%srow:", l)
			p("\tVPBROADCASTD (R12)(R9*4), Z8 // off")
			p("\tVBROADCASTSS (R13)(R9*4), Z9 // sa")
			for c := 0; c < np; c++ {
				o := c * 64
				p("\tVMOVDQU32 %d(DI), Z0", o)
				p("\tTESTQ $1, CX // QLoadAcc")
				p("\tJZ   %snoacc%d", l, c)
				p("\tVPADDD %d(AX), Z0, Z0 // s += Acc", o)
				p("%snoacc%d:", l, c)
				p("\tVPMULLD Z%d, Z8, Z1", 2+c)
				p("\tVPADDD Z1, Z0, Z0 // s + off·colsum")
				p("\tVCVTDQ2PS Z0, Z0")
				p("\tVMULPS Z9, Z0, Z0 // · sa")
				p("\tVMULPS Z%d, Z0, Z0 // · sb", 4+c)
				if fin != "plain" {
					p("\tVADDPS Z%d, Z0, Z0 // + bias", 6+c)
				}
				if fin == "res" {
					p("\tVADDPS %d(DX), Z0, Z0 // + residual", o)
				}
				if fin != "plain" {
					p("\tVMAXPS Z0, Z28, Z0 // lo > v ? lo : v")
					p("\tVMINPS Z0, Z29, Z0 // hi < v ? hi : v")
				}
				p("\tVMOVUPS Z0, %d(R10)", o)
			}
			p("\tADDQ $%d, DI", amxRowBytes)
			p("\tADDQ BX, AX")
			p("\tADDQ R11, R10")
			if fin == "res" {
				p("\tADDQ R8, DX")
			}
			p("\tINCQ R9")
			p("\tCMPQ R9, %d(SP)", amxSpillRows)
			p("\tJLT  %srow", l)
			p("\tVZEROUPPER")
			p("\tRET")
		}
	}
}

// peakAMX is the register-only ceiling of the amx table: four independent
// tdpbusd chains on zeroed tiles of the full shape.
func peakAMX() {
	p(`// func peakAMX(cfg *amxConfig, iters int)
TEXT ·peakAMX(SB), NOSPLIT, $0-16
	MOVQ cfg+0(FP), DI
	MOVQ iters+8(FP), CX`)
	p("\t" + ldtilecfg(0, "DI"))
	for t := 0; t < 8; t++ {
		p("\t" + tileZero(t))
	}
	p("pamxloop: // 4 chains × 16·16·64 multiply-adds")
	for t := 0; t < 4; t++ {
		p("\t" + tdpbusd(t, 4+t/2, 6+t%2))
	}
	p("\tDECQ CX")
	p("\tJNZ  pamxloop")
	p("\t" + tilerelease())
	p("\tRET")
	p("")
}
