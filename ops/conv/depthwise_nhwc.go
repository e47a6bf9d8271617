package conv

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// A depthwise convolution whose input or output is channels-last runs
// channels-last: each output row of pixels is one call of the table's
// DepthwiseRows over the input laid out channels-last with its columns'
// padding as zeros (no borders), every tap a vector of channels. The rows
// of padding above and below are not written: an output row near the top
// or bottom runs only the rows of taps that fall on the image (a late
// layer of two or three rows under a 5×5 kernel reads 40-60% of the
// taps), which gives the same sums, the skipped taps' terms being zeros.
// The input is copied (and, from NCHW, transposed) into that image once,
// its columns padded; an input already channels-last with the channels
// the kernels run is read where it is when it has no columns to add;
// when its images go strip by strip (forwardNHWC), by the strips whose
// taps all fall on its columns, only the strips at its sides copied
// (strip); otherwise by the pixels whose taps do, only the taps of each
// block's side pixels copied (rowBlockDirect). An NCHW output is
// transposed row by row as it is written.

// rowTapCost is a multiply-add of a channels-last depthwise convolution
// in units of a float32 multiply-add on the kernels: DepthwiseRows runs
// whole vectors of channels, several pixels at a time, but reads each
// tap's weights and inputs from memory (PaddleOCR's layers: 0.04 to 0.08
// ns a multiply-add, against the product's 0.02).
const rowTapCost = 2

// nhwcWeights returns w (M×kk, one plane per channel) tap-major, as
// DepthwiseRows reads it: value t·M + m is channel m's tap t.
func nhwcWeights(w []float32, m, kk int) []float32 {
	out := make([]float32, m*kk)
	for ch := 0; ch < m; ch++ {
		for t, v := range w[ch*kk : (ch+1)*kk] {
			out[t*m+ch] = v
		}
	}
	return out
}

// dwPlan is how a channels-last depthwise convolution of geometry g reads
// its input: the image the taps read has rows×cols pixels of cs values
// each (the copy with its columns padded, or x itself when padded is
// false), its rows the input's, and wt is the weight tap-major, cs values
// a tap. cs is the channels, or, for a table whose widest vectors want
// whole multiples of channels (DepthwiseAlign), the channels rounded up
// to one, the extra channels zeros: their rows run on those vectors,
// aligned, and give each real channel the same bits.
//
// An output row whose window starts ky0 rows of taps above the image
// runs the taps from row ky0 on, as tapRows reports: tap t of them reads
// offsFrom[ky0][t] values past the pixel's first on the window's first
// row on the image (tapOffsets).
type dwPlan struct {
	g          *Geometry
	p          plane
	rows, cols int
	cs         int
	padded     bool
	offsFrom   [][]int // by the first row of taps run
	// direct is offsFrom for taps read where x holds them (an input
	// channels-last with the plan's channels: x's rows of w pixels of cs
	// values), nil when the input is not (strip).
	direct [][]int
	// With direct: output pixels [in0, in1) have every tap on x's
	// columns; the others' taps are copied, padded, into windows of
	// sideCols pixels a row, read at sideOffs (rowBlockDirect).
	in0, in1   int
	sideCols   int
	sideOffs   [][]int
	wt         []float32
	taps       int // the taps the output rows of an image run, all rows'
	blocks, bw int // tasks an output row splits into (rowBlocks), pixels each
	align      int // the DepthwiseAlign the plan is for
}

// newDWPlan returns the plan of geometry g for input laid out
// channels-last (nhwcIn) or not, weight wt (tap-major, g.C a tap), on a
// table of DepthwiseAlign align.
func newDWPlan(g *Geometry, nhwcIn bool, wt []float32, align int) *dwPlan {
	p := plane2D(g)
	wp := p.ow
	if p.oh > 0 && p.ow > 0 {
		wp = (p.ow-1)*p.sw + (p.kw-1)*p.dw + 1
	}
	pl := &dwPlan{g: g, p: p, rows: p.h, cols: wp, cs: alignedChannels(g.C, align), padded: true, wt: wt, align: align}
	if pl.cs == g.C && nhwcIn && p.pw == 0 && wp <= p.w {
		pl.cols, pl.padded = p.w, false // every column of taps inside x
	}
	pl.offsFrom = p.tapOffsets(pl.cols, pl.cs)
	if nhwcIn && pl.cs == g.C {
		pl.direct = p.tapOffsets(p.w, pl.cs)
		pl.in0 = min(p.ow, (p.pw+p.sw-1)/p.sw)
		pl.in1 = pl.in0
		if span := p.w - 1 + p.pw - (p.kw-1)*p.dw; span >= 0 {
			pl.in1 = min(p.ow, max(pl.in0, span/p.sw+1))
		}
		if side := max(pl.in0, p.ow-pl.in1); side > 0 {
			pl.sideCols = (side-1)*p.sw + (p.kw-1)*p.dw + 1
			pl.sideOffs = p.tapOffsets(pl.sideCols, pl.cs)
		}
	}
	for oy := range p.oh {
		ky0, ky1 := pl.tapRows(oy)
		pl.taps += max(0, ky1-ky0) * p.kw
	}
	pl.blocks = rowBlocks(p.ow, g.C)
	pl.bw = (p.ow + pl.blocks - 1) / pl.blocks
	if pl.cs != g.C {
		taps := p.kh * p.kw
		pl.wt = make([]float32, taps*pl.cs)
		for t := range taps {
			copy(pl.wt[t*pl.cs:], wt[t*g.C:(t+1)*g.C])
		}
	}
	return pl
}

// tapOffsets returns, for each first row of taps ky0, the offsets of
// the taps from row ky0 on in an image of rows of cols pixels of cs
// values each: tap (ky, kx) at ((ky−ky0)·dh·cols + kx·dw)·cs values past
// its output pixel's first on row ky0.
func (p *plane) tapOffsets(cols, cs int) [][]int {
	offs := make([][]int, p.kh)
	for ky0 := range p.kh {
		for ky := ky0; ky < p.kh; ky++ {
			for kx := range p.kw {
				offs[ky0] = append(offs[ky0], ((ky-ky0)*p.dh*cols+kx*p.dw)*cs)
			}
		}
	}
	return offs
}

// alignedChannels returns the values a pixel of ch channels takes in a
// depthwise convolution's padded image on a table of DepthwiseAlign
// align: ch rounded up to a multiple of align when the zeros added are at
// most a quarter of ch (the vectors gain more than that: on the AVX-512
// tables' multiple of 8, 33 channels take 40, 20 take 24), else ch (12
// channels would compute a third more).
func alignedChannels(ch, align int) int {
	if align <= 1 || ch%align == 0 {
		return ch
	}
	cs := (ch + align - 1) / align * align
	if 4*(cs-ch) > ch {
		return ch
	}
	return cs
}

// tapRows returns the rows of taps [ky0, ky1) of output row oy that fall
// on the image's rows; ky1 <= ky0 when none does.
func (pl *dwPlan) tapRows(oy int) (ky0, ky1 int) {
	p := &pl.p
	top := oy*p.sh - p.ph // the window's first row, above the image when negative
	if top < 0 {
		ky0 = (-top + p.dh - 1) / p.dh
	}
	ky1 = p.kh
	if last := top + (p.kh-1)*p.dh; last >= p.h {
		ky1 = p.kh - (last-p.h+p.dh)/p.dh
	}
	return ky0, ky1
}

// runsNHWC reports whether a depthwise convolution of geometry g runs
// channels-last: one output channel per input channel.
func runsNHWC(g *Geometry) bool {
	return g.Group == g.C && g.M == g.C && g.cg() == 1 && len(g.In) <= 2
}

// forwardNHWC computes y = o.finish(conv(x)) for a depthwise geometry of
// one output channel per input channel (runsNHWC) with the plan's
// weights, x and y laid out as o says (o.res in y's layout).
//
// A batch of at least two images for each of the engine's cores (of two
// cores, on one: a one-core run takes the way a two-core one would, so a
// profile tells what could split) is split by images: a task pads its
// image (when the plan pads) and computes its rows on one core, which
// reads the image where the layer before wrote it (gemm's claims give a
// core the same images, layer after layer) and the padded copy where it
// wrote it itself; an image of padBudget values or less that the plan
// reads where it is (pl.direct) goes strip by strip, copying only its
// sides' strips, and a larger one by blocks of rows (rowBlockDirect).
// Fewer images of padBudget values or less padded, whose output rows'
// blocks are two a core or more, go by strips of columns
// (forwardStrips). Otherwise images the plan reads where they are go by
// blocks of output rows: with columns to add, each copying only its side
// pixels' taps (rowBlockDirect), no pass over the whole image that the
// blocks wait for; with none, all at once over x itself (rowBlock). Any
// others go a few at a time, as many as padBudget holds padded: tasks
// are rows of their padded copies, then blocks of output rows, which
// read the copies while they are in cache; a core may read rows the
// other wrote.
func forwardNHWC(c *ops.Context, pl *dwPlan, x, y []float32, o *output) error {
	g := pl.g
	if g.Batch == 0 || g.C == 0 || g.OutSize() == 0 {
		return nil
	}
	o.tb = c.Engine().Table()
	img := pl.rows * pl.cols * pl.cs
	rowTasks := pl.p.oh * pl.blocks // an image's row blocks
	if g.Batch >= 2*max(2, c.Engine().Threads()) {
		work := g.Batch * (pl.padWork(o) + pl.rowsWork(o))
		return run(c, g.Batch, work, func(_ *gemm.Engine, s *scratch, b int) error {
			if pl.direct != nil && img <= padBudget {
				for strip := range pl.blocks {
					pl.strip(s, x, y, b, strip, o)
				}
				return nil
			}
			if pl.direct != nil {
				for task := range rowTasks {
					pl.rowBlockDirect(s, x, y, b, task, o)
				}
				return nil
			}
			// A plan that could read x where it is has pl.direct: this
			// one pads.
			src := pl.padColumns(s, x, b, 0, pl.cols, o)
			for task := range rowTasks {
				pl.rowBlock(s, src, b, y, b, task, o)
			}
			return nil
		})
	}
	if pl.byStrips(g.Batch, c.Engine().Threads()) {
		return pl.forwardStrips(c, x, y, o)
	}
	if pl.direct != nil && pl.padded {
		return run(c, g.Batch*rowTasks, g.Batch*pl.rowsWork(o), func(_ *gemm.Engine, s *scratch, task int) error {
			pl.rowBlockDirect(s, x, y, task/rowTasks, task%rowTasks, o)
			return nil
		})
	}
	per, src := g.Batch, x
	if pl.padded {
		per = max(1, min(g.Batch, padBudget/max(img, 1)))
		src = c.Scratch(per * img)
		defer c.Free(src)
	}
	for b0 := 0; b0 < g.Batch; b0 += per {
		n, first := min(per, g.Batch-b0), 0
		if pl.padded {
			first = b0
			pieces := pl.padPieces()
			err := run(c, n*pl.rows*pieces, n*pl.padWork(o), func(_ *gemm.Engine, _ *scratch, task int) error {
				row, piece := task/pieces, task%pieces
				j0, j1 := piece*pl.cols/pieces, (piece+1)*pl.cols/pieces
				pl.padRow(x, src[(row*pl.cols+j0)*pl.cs:][:(j1-j0)*pl.cs], b0+row/pl.rows, row%pl.rows, j0, j1, o)
				return nil
			})
			if err != nil {
				return err
			}
		}
		err := run(c, n*rowTasks, n*pl.rowsWork(o), func(_ *gemm.Engine, s *scratch, task int) error {
			pl.rowBlock(s, src, first, y, b0+task/rowTasks, task%rowTasks, o)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// forwardStrips is forwardNHWC's way for a few padded images of at most
// padBudget values each (byStrips): a task is a strip of columns of one
// image, one of its output rows' blocks (pl.blocks of them, pl.bw pixels
// wide), through all of its output rows (strip). Padding the whole image
// first was a pass of its own that the other cores waited for, too short
// to split (2-6 us a layer of PaddleOCR), after which each core read rows
// the other had padded: on two cores PaddleOCR's depthwise layers ran
// slower than on one.
func (pl *dwPlan) forwardStrips(c *ops.Context, x, y []float32, o *output) error {
	g, p := pl.g, &pl.p
	strips := pl.blocks
	cols := min(pl.cols, (pl.bw-1)*p.sw+(p.kw-1)*p.dw+1)
	padWork := pl.padWork(o) / max(pl.cols, 1) * cols * strips
	return run(c, g.Batch*strips, g.Batch*(padWork+pl.rowsWork(o)), func(_ *gemm.Engine, s *scratch, task int) error {
		pl.strip(s, x, y, task/strips, task%strips, o)
		return nil
	})
}

// strip computes the output rows' blocks of column strip of image b: a
// strip whose taps all fall on the image's columns reads x where it is
// when the plan can (pl.direct); any other pads the columns its taps
// read (those under the kernel's overhang are copied by the strips on
// both sides) into its own scratch and computes from there. Of
// PaddleOCR's rows of 96 pixels in six strips, four copy nothing.
// (Copying only a side strip's overhanging pixels' taps, block by block
// as rowBlockDirect does, cost those layers 3-20% more on one core: each
// input row is copied once for each row of taps, and the side pixels
// take calls of their own.)
func (pl *dwPlan) strip(s *scratch, x, y []float32, b, strip int, o *output) {
	p := &pl.p
	x0 := strip * pl.bw
	px := min(pl.bw, p.ow-x0)
	if pl.direct != nil && x0 >= pl.in0 && x0+px <= pl.in1 {
		for oy := range p.oh {
			pl.rowBlockDirect(s, x, y, b, oy*pl.blocks+strip, o)
		}
		return
	}
	j0, j1 := x0*p.sw, min(pl.cols, (x0+px-1)*p.sw+(p.kw-1)*p.dw+1) // the columns the taps read, the padded copy's
	src := pl.padColumns(s, x, b, j0, j1, o)
	for oy := range p.oh {
		pl.rowBlock(s, src, b, y, b, oy*pl.blocks+strip, o)
	}
}

// byStrips reports whether batch padded images go by strips of columns
// (forwardStrips) on an engine of threads cores (of two, on one: a
// one-core run takes the way a two-core one would): when each image's
// padded copy is at most padBudget values and their output rows' blocks
// are at least two a core. Strips narrower than the blocks cost more
// than they split: PaddleOCR's first depthwise layer (8 channels, two
// blocks a row) in four strips took 22% longer on one core.
func (pl *dwPlan) byStrips(batch, threads int) bool {
	return pl.padded && pl.rows*pl.cols*pl.cs <= padBudget && batch*pl.blocks >= 2*max(2, threads)
}

// padColumns pads columns [j0, j1) of every row of image b of x into
// s.pad, laid out as the plan's padded copy of one image, and returns
// it.
func (pl *dwPlan) padColumns(s *scratch, x []float32, b, j0, j1 int, o *output) []float32 {
	s.pad = grow(s.pad, pl.rows*pl.cols*pl.cs)
	for iy := range pl.rows {
		pl.padRow(x, s.pad[(iy*pl.cols+j0)*pl.cs:][:(j1-j0)*pl.cs], b, iy, j0, j1, o)
	}
	return s.pad
}

// padBudget bounds the padded copies of the images a channels-last
// depthwise convolution takes at once (values): a few hundred KiB, which
// stay in cache for the rows that read them.
const padBudget = 1 << 16

// padWork is the cost of an image's padded copy, in units of a float32
// multiply-add on the kernels.
func (pl *dwPlan) padWork(o *output) int {
	cost := 2 * ops.VectorCost // copied or cleared rows: ~0.15 ns a value (PaddleOCR)
	if !o.nhwcIn {
		cost = transposeCost
	}
	return pl.rows * pl.cols * pl.cs * cost
}

// padPieces is how many tasks a row of the padded copy splits into: a
// few rows of many channels (PaddleOCR's last layers, two rows of 200)
// would otherwise be too few tasks to split across cores, and one core
// would copy the whole image while the others wait. A piece is at least
// padPiece values, and a few rows together at most padTasks pieces.
func (pl *dwPlan) padPieces() int {
	return max(1, min(pl.cols*pl.cs/padPiece, (padTasks+pl.rows-1)/max(pl.rows, 1)))
}

const (
	padPiece = 4096
	padTasks = 16
)

// padRow writes pixels [j0, j1) of the padded copy's row iy of image b
// of x (laid out as o says; the copy's columns padded as pl says) into
// dst, channels-last: (j1-j0)·cs values, column j0 first.
func (pl *dwPlan) padRow(x, dst []float32, b, iy, j0, j1 int, o *output) {
	p, ch, cs, inSize := &pl.p, pl.g.C, pl.cs, pl.g.InSize()
	left := min(p.pw, pl.cols)
	cols := max(0, min(p.w, pl.cols-left))
	// The image's pixels [i0, i1) land on the copy's [left+i0, left+i1).
	i0, i1 := max(j0-left, 0), min(j1-left, cols)
	dst = dst[:(j1-j0)*cs]
	if i1 <= i0 {
		clear(dst)
		return
	}
	clear(dst[:(left+i0-j0)*cs])
	pixels := dst[(left+i0-j0)*cs : (left+i1-j0)*cs]
	n := i1 - i0
	switch {
	case o.nhwcIn && cs == ch: // PadChannels's values: the pixels as they are
		copy(pixels, x[((b*p.h+iy)*p.w+i0)*ch:][:n*ch])
	case o.nhwcIn:
		o.tb.PadChannels(pixels, x[((b*p.h+iy)*p.w+i0)*ch:][:n*ch], n, ch, cs)
	default:
		transposeStrided(o.tb, pixels, cs, x[b*ch*inSize+iy*p.w+i0:], inSize, ch, n)
		for j := ch; j < len(pixels) && cs > ch; j += cs {
			clear(pixels[j : j+cs-ch]) // each pixel's added channels
		}
	}
	clear(dst[(left+i1-j0)*cs:])
}

// dwBlock is the fewest output pixels of a row one task of rowsNHWC
// computes, and dwBlockValues the fewest values: the late layers of a
// mobile network are a few rows of many pixels (PaddleOCR's 2×96), which
// split over cores only by pieces of rows (a core then takes the same
// positions of the image as the pointwise products around the layer,
// gemm's claims, and reads what its own caches hold), while a row of few
// channels (8: one vector a pixel) is pieces of a few dozen
// multiply-adds, which the calls' own cost would outweigh.
const (
	dwBlock       = 16
	dwBlockValues = 512
)

// rowBlocks returns how many tasks an output row of ow pixels of ch
// channels splits into: pieces of at least dwBlock pixels and
// dwBlockValues values, as even as they come, each of the width
// ⌈ow/blocks⌉ but the last (so no block starts past the row's end).
func rowBlocks(ow, ch int) int {
	blocks := max(1, min((ow+dwBlock-1)/dwBlock, (ow*ch+dwBlockValues-1)/dwBlockValues))
	bw := max(1, (ow+blocks-1)/blocks)
	return (ow + bw - 1) / bw
}

// rowsWork is the cost of an image's output rows, in units of a float32
// multiply-add on the kernels.
func (pl *dwPlan) rowsWork(o *output) int {
	ch, outSize := pl.g.C, pl.g.OutSize()
	// The taps run whole vectors of the table's lanes (align): 20
	// channels cost an AVX-512 table as much as 24. On such a table (align
	// above 1) a pixel costs at least what one of 16 channels does: its
	// loads and its step through the row are a vector's whatever the
	// vector's width (PaddleOCR's 8-channel layer: 0.1 ns a multiply-add
	// on one YMM vector a pixel, against 0.04-0.08 for its wider layers).
	lanes := ch
	if a := pl.align; a > 1 {
		lanes = max(16, (ch+a-1)/a*a)
	}
	work := pl.p.ow*lanes*pl.taps*rowTapCost + outSize*ch*finishCost
	if !o.nhwcOut {
		work += outSize * ch * gatherCost
	}
	return work
}

// rowBlock computes and finishes block task of image b's output rows
// (pl.blocks a row; task = row·blocks + block), its input in src as pl
// says (padded copies from image first on, or x itself).
func (pl *dwPlan) rowBlock(s *scratch, src []float32, first int, y []float32, b, task int, o *output) {
	p := &pl.p
	oy, x0 := task/pl.blocks, task%pl.blocks*pl.bw
	px := min(pl.bw, p.ow-x0)
	ky0, ky1 := pl.tapRows(oy)
	if ky1 <= ky0 {
		pl.blockFrom(s, nil, nil, 0, y, b, oy, x0, px, o)
		return
	}
	iy := oy*p.sh - p.ph + ky0*p.dh // the first row of taps run
	at := ((b-first)*pl.rows+iy)*pl.cols*pl.cs + x0*p.sw*pl.cs
	pl.blockFrom(s, src[at:], pl.offsFrom[ky0][:(ky1-ky0)*p.kw], ky0, y, b, oy, x0, px, o)
}

// rowBlockDirect is rowBlock for a plan that reads x where it is
// (pl.direct): the block's pixels whose taps all fall on the image's
// columns read x; those at its sides whose taps overhang it read a copy
// of just the rows and columns their taps cover, padded, in s.pad. No
// image is copied whole, so the blocks of one image split across cores
// with nothing to wait for.
func (pl *dwPlan) rowBlockDirect(s *scratch, x, y []float32, b, task int, o *output) {
	p, cs := &pl.p, pl.cs
	oy, x0 := task/pl.blocks, task%pl.blocks*pl.bw
	x1 := min(x0+pl.bw, p.ow)
	ky0, ky1 := pl.tapRows(oy)
	if ky1 <= ky0 {
		pl.blockFrom(s, nil, nil, 0, y, b, oy, x0, x1-x0, o)
		return
	}
	iy := oy*p.sh - p.ph + ky0*p.dh
	taps := (ky1 - ky0) * p.kw
	in0, in1 := min(max(pl.in0, x0), x1), min(max(pl.in1, x0), x1) // pl.in0 <= pl.in1: in0 <= in1
	var parts [3]tapPart
	n := 0
	if in0 < in1 {
		at := ((b*p.h+iy)*p.w + in0*p.sw - p.pw) * cs
		parts[n] = tapPart{x[at:], pl.direct[ky0][:taps], in0 - x0, in1 - x0}
		n++
	}
	rows, wc := (ky1-ky0-1)*p.dh+1, pl.sideCols // the image rows the taps span; a side window's row, pixels
	s.pad = grow(s.pad, 2*rows*wc*cs)
	for i, sd := range [2][2]int{{x0, in0}, {in1, x1}} {
		e0, e1 := sd[0], sd[1]
		if e0 >= e1 {
			continue
		}
		// The padded copy's columns [j0, j0+cols), in rows of wc pixels.
		j0, cols := e0*p.sw, (e1-e0-1)*p.sw+(p.kw-1)*p.dw+1
		win := s.pad[i*rows*wc*cs:][:rows*wc*cs]
		for r := range rows {
			pl.padRow(x, win[r*wc*cs:][:cols*cs], b, iy+r, j0, j0+cols, o)
		}
		parts[n] = tapPart{win, pl.sideOffs[ky0][:taps], e0 - x0, e1 - x0}
		n++
	}
	pl.blockFromParts(s, parts[:n], ky0, y, b, oy, x0, x1-x0, o)
}

// blockFrom computes and finishes the px pixels of output row oy of
// image b from column x0: their sums are the bias (or zeros) plus taps
// offs from tap row ky0 on, over src, which holds the block's first
// pixel's first tap (pl.cs values a pixel, pixels p.sw·cs apart); no
// offs: the bias alone.
func (pl *dwPlan) blockFrom(s *scratch, src []float32, offs []int, ky0 int, y []float32, b, oy, x0, px int, o *output) {
	pl.blockFromParts(s, []tapPart{{src, offs, 0, px}}, ky0, y, b, oy, x0, px, o)
}

// tapPart is a run of a block's pixels whose taps one source holds:
// pixels [p0, p1) of the block, src holding pixel p0's first tap (the
// plan's cs values a pixel, pixels p.sw·cs apart), tap t offs[t] values
// past it; no offs: the bias alone.
type tapPart struct {
	src    []float32
	offs   []int
	p0, p1 int
}

// blockFromParts is blockFrom over parts, each a run of the block's
// pixels read from its own source: the sums' bias, and the finish, once
// for the whole block.
func (pl *dwPlan) blockFromParts(s *scratch, parts []tapPart, ky0 int, y []float32, b, oy, x0, px int, o *output) {
	g, p := pl.g, &pl.p
	ch, cs, outSize := g.C, pl.cs, g.OutSize()
	tb := o.tb
	finish := o.res != nil || o.act.kind != actNone
	step := p.sw * cs
	rowLen := px * ch
	at := (b*outSize + oy*p.ow + x0) * ch // the block's first value, channels-last
	var row []float32
	if o.nhwcOut {
		row = y[at:][:rowLen]
	} else {
		s.out = grow(s.out, rowLen)
		row = s.out
	}
	wide := row // the pixels' sums, cs values each
	if cs != ch {
		s.rows = grow(s.rows, px*cs)
		wide = s.rows[:px*cs]
	}
	if o.bias != nil { // the bias once, then doubled
		copy(wide[:ch], o.bias)
		clear(wide[ch:cs])
		for i := cs; i < len(wide); i *= 2 {
			copy(wide[i:], wide[:i])
		}
	} else {
		clear(wide)
	}
	for _, part := range parts {
		if len(part.offs) > 0 && part.p1 > part.p0 {
			tb.DepthwiseRows(wide[part.p0*cs:part.p1*cs], part.src, pl.wt[ky0*p.kw*cs:], part.offs, step, cs)
		}
	}
	if cs != ch {
		tb.CopyBlock(row, ch, wide, cs, px, ch)
	}
	if o.nhwcOut {
		if finish {
			var res []float32
			if o.res != nil {
				res = o.res[at:][:rowLen]
			}
			o.finish(row, nil, res)
		}
		return
	}
	planes := y[b*ch*outSize+oy*p.ow+x0:]
	if o.res == nil {
		if finish {
			o.finish(row, nil, nil)
		}
		transposeStrided(tb, planes, outSize, row, ch, px, ch)
		return
	}
	// An NCHW residual is added to the planes (then the activation).
	transposeStrided(tb, planes, outSize, row, ch, px, ch)
	for m := 0; m < ch; m++ {
		at := (b*ch+m)*outSize + oy*p.ow + x0
		o.finish(y[at:at+px], nil, o.res[at:at+px])
	}
}
