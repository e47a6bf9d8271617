package main

import "fmt"

// blockLoops writes the K loops of a block kernel: for each panel count
// (panelCounts) and row count (tileHeights, the rows at rowsOff of the
// argument arg), two steps an iteration (step(rows, np, a offset, b
// offset, b registers): one group of k of every row and panel) and the
// odd one, then a jump to done. CX counts the steps left, AX the rows'
// byte offset, BX and DX the panels'.
//
// With segs (the float kernel), K is the segments R14 walks to the
// address at 1536(SP), 1544(SP) columns each: each segment sets AX to its
// offset and CX to its columns, and its last step moves on to the next.
//
// With ahead (the float kernel, segs too), the loops of eight rows and
// two or three panels also draw FBlock.Ahead toward the cache, a line an
// iteration, into L2 (PREFETCHT1): R14 holds the line for the segment's
// loop, the segment pointer waiting at 1568(SP), the next line at
// 1560(SP) and the last at 1576(SP), where the line stays once reached.
// A block's first tile streams its weights from memory as it reads them
// (prefetch); the taller products' later tiles read them from the cache
// and leave the memory idle, so each takes a share of the next block's.
// Those tiles (FCached or QCached, kept in the frame at cached) run a
// copy of the 8-row loops of two and three panels without the stream's
// prefetches, which only took load slots there: float 1024³ from 73% to
// 76% of the FMA ceiling on one core, 3136×576×64 (two panels a group)
// from 69% to 72%.
func blockLoops(prefix, arg string, rowsOff int, done, what string, segs, ahead bool, cached int, step func(rows, np, ao, bo int, breg [3]int)) {
	panelCounts(prefix, func(np int, prefix string) {
		tileHeights(prefix, arg, rowsOff, segs, func(h int, label string) {
			draw := ahead && segs && h == 8 && np >= 2
			if draw && np < 3 {
				// A narrower group's loops draw only with lines to draw
				// (a convolution's next tile): drawing nothing cost
				// 3136×576×64 1% on one core.
				p("\tCMPQ %d(SP), $0 // no Ahead", noAheadSlot)
				p("\tJNE  %snd", label)
				tileLoops(h, np, label, label, done, what, segs, true, cached, step)
				p("%snd:", label)
				tileLoops(h, np, label+"nd", label, done, what, segs, false, cached, step)
				return
			}
			tileLoops(h, np, label, label, done, what, segs, draw, cached, step)
		})
	})
}

// noAheadSlot is the frame slot of the float kernel that is 1 when the
// block has no Ahead to draw (fewer than 16 values), 0 otherwise.
const noAheadSlot = 1592

// tileLoops writes blockLoops' loops of one tile height and panel count,
// labelled from label, whose segments start at seg+"seg"; draw says
// whether they draw FBlock.Ahead.
func tileLoops(h, np int, label, seg, done, what string, segs, draw bool, cached int, step func(rows, np, ao, bo int, breg [3]int)) {
	if draw {
		p("\tMOVQ R14, 1568(SP)")
		p("\tMOVQ 1560(SP), R14 // the next line of Ahead")
	}
	p("\tCMPQ CX, $2")
	p("\tJLT  %stail", label)
	loop := func(name string, stream bool) {
		p("%s: // %s", name, what)
		if stream {
			prefetch(np)
		}
		if draw {
			p("\tPREFETCHT1 (R14)")
			p("\tADDQ $64, R14")
			p("\tCMPQ R14, 1576(SP)")
			p("\tCMOVQHI 1576(SP), R14")
		}
		step(h, np, 0, 0, [3]int{24, 25, 26})
		step(h, np, 4, 64, [3]int{29, 30, 31})
		p("\tADDQ $8, AX")
		p("\tADDQ $128, BX")
		p("\tADDQ $128, DX")
		p("\tSUBQ $2, CX")
		p("\tCMPQ CX, $2")
		p("\tJGE  %s", name)
	}
	if cached != 0 && h == 8 && np >= 2 {
		p("\tCMPQ %d(SP), $0", cached)
		p("\tJNE  %scloop", label)
		loop(label+"loop", true)
		p("\tJMP  %stail", label)
		loop(label+"cloop", false)
	} else {
		loop(label+"loop", true)
	}
	p("%stail:", label)
	if !segs {
		p("\tTESTQ CX, CX")
		p("\tJZ    %s", done)
		step(h, np, 0, 0, [3]int{24, 25, 26})
		p("\tJMP  %s", done)
		return
	}
	p("\tTESTQ CX, CX")
	p("\tJZ    %snext", label)
	step(h, np, 0, 0, [3]int{24, 25, 26})
	p("\tADDQ $64, BX")
	p("\tADDQ $64, DX")
	p("%snext:", label)
	if draw {
		p("\tMOVQ R14, 1560(SP)")
		p("\tMOVQ 1568(SP), R14")
	}
	p("\tADDQ $8, R14")
	p("\tCMPQ R14, 1536(SP)")
	p("\tJLT  %sseg", seg)
	p("\tJMP  %s", done)
}

// panelCounts branches on the block's panel count, in AX (as panels and
// panelsF leave it), to tiles of 3, 2 or 1 panels, each written by
// tiles(np, prefix): a block of fewer panels than the register tile (the
// narrow groups of a product whose panels do not divide by three: N = 64
// is two groups of two) multiplies only its own, where a 3-panel loop
// spent a third or two of its multiply-adds on copies of panel 0. Every
// value is the same sum in the same order either way.
func panelCounts(prefix string, tiles func(np int, prefix string)) {
	p("\tCMPQ AX, $2")
	p("\tJLT  %sp1", prefix)
	p("\tJEQ  %sp2", prefix)
	for _, np := range []int{3, 2, 1} {
		label := fmt.Sprintf("%sp%d", prefix, np)
		p("%s: // %d panels", label, np)
		tiles(np, label)
	}
}

// tileHeights branches on the block's row count (at rowsOff of the
// argument arg, read through the frame: every register is taken) to a loop
// for 1, 2, 4 or 8 rows, the smallest that holds them, each written by
// loop(h, label); each loop sets AX to 0 first (the byte offset along the
// rows) and jumps to the tile's store when done. A batch-1 product then
// multiplies one row, not eight copies of it: from DRAM the eight-row
// loop's arithmetic, not the weights' bandwidth, set the pace.
func tileHeights(prefix, arg string, rowsOff int, segs bool, loop func(h int, label string)) {
	heights := []int{1, 2, 4, 8}
	p("\tMOVQ %s+0(FP), AX", arg)
	p("\tMOVQ %d(AX), AX // rows", rowsOff)
	for _, h := range heights[:len(heights)-1] {
		p("\tCMPQ AX, $%d", h)
		p("\tJLE  %sh%d", prefix, h)
	}
	for i := len(heights) - 1; i >= 0; i-- { // the tallest falls through
		h := heights[i]
		label := fmt.Sprintf("%sh%d", prefix, h)
		p("%s: // %d rows", label, h)
		if segs {
			p("%sseg: // a segment: its offset along the rows, its columns", label)
			p("\tMOVQ (R14), AX")
			p("\tSHLQ $2, AX")
			p("\tMOVQ 1544(SP), CX")
		} else {
			p("\tXORQ AX, AX // byte offset along the rows")
		}
		loop(h, label)
	}
}
