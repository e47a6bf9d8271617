package conv

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// A depthwise convolution whose input or output is channels-last runs
// channels-last: each output row of pixels is one call of the table's
// DepthwiseRows over the input laid out channels-last with its padding as
// zeros (no borders), every tap a vector of channels. The input is copied
// (and, from NCHW, transposed) into that padded image once; an input
// already channels-last with no padding to add is read where it is. An
// NCHW output is transposed row by row as it is written.

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
// each (the padded copy, or x itself when padded is false), tap t of an
// output pixel reads offs[t] values past the pixel's first, and wt is the
// weight tap-major, cs values a tap. cs is the channels, or, for a table
// whose widest vectors want whole multiples of channels (DepthwiseAlign),
// the channels rounded up to one, the extra channels zeros: their rows
// run on those vectors, aligned, and give each real channel the same
// bits.
type dwPlan struct {
	g          *Geometry
	p          plane
	rows, cols int
	cs         int
	padded     bool
	offs       []int
	wt         []float32
	align      int // the DepthwiseAlign the plan is for
}

// newDWPlan returns the plan of geometry g for input laid out
// channels-last (nhwcIn) or not, weight wt (tap-major, g.C a tap), on a
// table of DepthwiseAlign align.
func newDWPlan(g *Geometry, nhwcIn bool, wt []float32, align int) *dwPlan {
	p := plane2D(g)
	hp, wp := p.oh, p.ow
	if p.oh > 0 && p.ow > 0 {
		hp, wp = (p.oh-1)*p.sh+(p.kh-1)*p.dh+1, (p.ow-1)*p.sw+(p.kw-1)*p.dw+1
	}
	pl := &dwPlan{g: g, p: p, rows: hp, cols: wp, cs: alignedChannels(g.C, align), padded: true, wt: wt, align: align}
	if pl.cs == g.C && nhwcIn && p.ph == 0 && p.pw == 0 && hp <= p.h && wp <= p.w {
		pl.rows, pl.cols, pl.padded = p.h, p.w, false // every tap inside x
	}
	for ky := 0; ky < p.kh; ky++ {
		for kx := 0; kx < p.kw; kx++ {
			pl.offs = append(pl.offs, (ky*p.dh*pl.cols+kx*p.dw)*pl.cs)
		}
	}
	if pl.cs != g.C {
		taps := len(pl.offs)
		pl.wt = make([]float32, taps*pl.cs)
		for t := range taps {
			copy(pl.wt[t*pl.cs:], wt[t*g.C:(t+1)*g.C])
		}
	}
	return pl
}

// alignedChannels returns the values a pixel of ch channels takes in a
// depthwise convolution's padded image on a table of DepthwiseAlign
// align: ch rounded up to a multiple of align when the zeros added are at
// most a quarter of ch (the widest vectors gain more than that: 200
// channels take 208, 40 take 48), else ch (24 channels would compute a
// third more).
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

// runsNHWC reports whether a depthwise convolution of geometry g runs
// channels-last: one output channel per input channel.
func runsNHWC(g *Geometry) bool {
	return g.Group == g.C && g.M == g.C && g.cg() == 1 && len(g.In) <= 2
}

// forwardNHWC computes y = o.finish(conv(x)) for a depthwise geometry of
// one output channel per input channel (runsNHWC) with the plan's
// weights, x and y laid out as o says (o.res in y's layout). Images go
// a few at a time, as many as padBudget holds padded: tasks are (image,
// row) pairs, first the rows of their padded copies, then the output
// rows, which read the copies while they are in cache.
func forwardNHWC(c *ops.Context, pl *dwPlan, x, y []float32, o *output) error {
	g := pl.g
	ch, outSize := g.C, g.OutSize()
	if g.Batch == 0 || ch == 0 || outSize == 0 {
		return nil
	}
	o.tb = c.Engine().Table()
	img := pl.rows * pl.cols * pl.cs
	per, src := g.Batch, x
	if pl.padded {
		per = max(1, min(g.Batch, padBudget/max(img, 1)))
		src = c.Scratch(per * img)
		defer c.Free(src)
	}
	for b0 := 0; b0 < g.Batch; b0 += per {
		n := min(per, g.Batch-b0)
		if pl.padded {
			if err := padNHWC(c, pl, x, src, b0, n, o); err != nil {
				return err
			}
		}
		if err := rowsNHWC(c, pl, src, y, b0, n, o); err != nil {
			return err
		}
	}
	return nil
}

// padBudget bounds the padded copies of the images a channels-last
// depthwise convolution takes at once (values): a few hundred KiB, which
// stay in cache for the rows that read them.
const padBudget = 1 << 16

// padNHWC writes images [b0, b0+n) of x (laid out as o says), padded as pl
// says, into src, channels-last: one task per padded row.
func padNHWC(c *ops.Context, pl *dwPlan, x, src []float32, b0, n int, o *output) error {
	p, ch, cs, inSize := &pl.p, pl.g.C, pl.cs, pl.g.InSize()
	tb := o.tb
	cost := 2 * ops.VectorCost // copied or cleared rows: ~0.15 ns a value (PaddleOCR)
	if !o.nhwcIn {
		cost = transposeCost
	}
	return run(c, n*pl.rows, n*pl.rows*pl.cols*cs*cost, func(_ *gemm.Engine, _ *scratch, task int) error {
		i, py := task/pl.rows, task%pl.rows
		b := b0 + i
		dst := src[(i*pl.rows+py)*pl.cols*cs:][:pl.cols*cs]
		iy := py - p.ph
		if iy < 0 || iy >= p.h {
			clear(dst)
			return nil
		}
		left := min(p.pw, pl.cols)
		cols := max(0, min(p.w, pl.cols-left))
		clear(dst[:left*cs])
		pixels := dst[left*cs : (left+cols)*cs]
		switch {
		case o.nhwcIn && cs == ch:
			copy(pixels, x[((b*p.h+iy)*p.w)*ch:][:cols*ch])
		case o.nhwcIn:
			row := x[((b*p.h+iy)*p.w)*ch:][:cols*ch]
			for j := range cols {
				copy(pixels[j*cs:], row[j*ch:(j+1)*ch])
				clear(pixels[j*cs+ch : (j+1)*cs])
			}
		case cols > 0:
			transposeStrided(tb, pixels, cs, x[b*ch*inSize+iy*p.w:], inSize, ch, cols)
			for j := ch; j < len(pixels) && cs > ch; j += cs {
				clear(pixels[j : j+cs-ch]) // each pixel's added channels
			}
		}
		clear(dst[(left+cols)*cs:])
		return nil
	})
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
// dwBlockValues values, as even as they come.
func rowBlocks(ow, ch int) int {
	return max(1, min((ow+dwBlock-1)/dwBlock, (ow*ch+dwBlockValues-1)/dwBlockValues))
}

// rowsNHWC computes and finishes the output rows of images [b0, b0+n),
// their inputs in src as pl says (padded copies from image b0 on, or x
// itself): one task per block of dwBlock pixels of an output row.
func rowsNHWC(c *ops.Context, pl *dwPlan, src, y []float32, b0, n int, o *output) error {
	g, p := pl.g, &pl.p
	ch, cs, outSize := g.C, pl.cs, g.OutSize()
	tb := o.tb
	first := 0 // src's first image
	if pl.padded {
		first = b0
	}
	finish := o.res != nil || o.act.kind != actNone
	// The taps run whole vectors of the table's widest lanes (align): 8
	// channels cost an AVX-512 table as much as 16.
	lanes := ch
	if a := pl.align; a > 1 {
		lanes = (ch + a - 1) / a * a
	}
	work := n * outSize * (lanes*len(pl.offs)*rowTapCost + ch*finishCost)
	if !o.nhwcOut {
		work += n * outSize * ch * gatherCost
	}
	step := p.sw * cs
	blocks := rowBlocks(p.ow, ch) // per output row
	bw := (p.ow + blocks - 1) / blocks
	return run(c, n*p.oh*blocks, work, func(_ *gemm.Engine, s *scratch, task int) error {
		b, oy, x0 := b0+task/(p.oh*blocks), task/blocks%p.oh, task%blocks*bw
		px := min(bw, p.ow-x0)
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
		tb.DepthwiseRows(wide, src[((b-first)*pl.rows+oy*p.sh)*pl.cols*cs+x0*step:], pl.wt, pl.offs, step, cs)
		if cs != ch {
			for i := range px {
				copy(row[i*ch:(i+1)*ch], wide[i*cs:])
			}
		}
		if o.nhwcOut {
			if finish {
				var res []float32
				if o.res != nil {
					res = o.res[at:][:rowLen]
				}
				o.finish(row, nil, res)
			}
			return nil
		}
		planes := y[b*ch*outSize+oy*p.ow+x0:]
		if o.res == nil {
			if finish {
				o.finish(row, nil, nil)
			}
			transposeStrided(tb, planes, outSize, row, ch, px, ch)
			return nil
		}
		// An NCHW residual is added to the planes (then the activation).
		transposeStrided(tb, planes, outSize, row, ch, px, ch)
		for m := 0; m < ch; m++ {
			at := (b*ch+m)*outSize + oy*p.ow + x0
			o.finish(y[at:at+px], nil, o.res[at:at+px])
		}
		return nil
	})
}
