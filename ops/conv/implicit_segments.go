package conv

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// A float convolution of one group over two spatial axes, writing
// channels-last, multiplies its image where it lies instead of gathering
// im2col rows (gemm.Engine.MatMulSegments): the image is copied once
// into a zero-padded channels-last copy, in which the taps of a kernel row
// are one run of kw·C values (dilation 1 along W; else each tap its own
// run of C), a segment of the product's K, and output positions along an
// output row are rows sw·C apart. The im2col rows of a 3×3 kernel are 9
// times the image; the padded copy is the image once.
//
// A tile is (part of) one output row, whose product goes straight into
// the output, finished in the product's registers when its stage is a
// bias, a residual and a clamp (gemm.Finish). With unit strides and a
// stage it cannot finish, a tile spans output rows instead: position i
// of the padded grid (i = y·Wp + x) reads the copy at i·C, so every row
// of the grid is a row of the product, and the few past the right edge of
// each output row (x ≥ OW: kw−1 of each Wp) are computed into the tile's
// buffer and dropped. Finished in the product, ResNet-50's 3×3 layers of
// 56 and 28 pixels a row ran 5-8% faster a row a tile than over the
// grid's tiles, copied out and finished afterwards.

// segmentsFit reports whether forwardSegments runs g: float32 weights, one
// group, two spatial axes, output rows of minSegmentRow pixels or more,
// written channels-last with their bias repeated for a row at least
// (output.tileBias), and a kernel larger than one position (so no
// channel scale of a channels-last image is left to apply: the fused
// convolution scaled the image).
func (cw *gemmWeights) segmentsFit(g *Geometry, o *output) bool {
	return cw.q == nil && g.Group == 1 && len(g.In) == 2 && g.Out[1] >= minSegmentRow && o.nhwcOut && g.KernelSize() > 1 &&
		(o.bias == nil || len(o.biasRep) >= g.M) && (o.xscale == nil || !o.nhwcIn)
}

// minSegmentRow is the fewest output pixels a row of a convolution has
// for forwardSegments to run it. Narrower rows leave too few rows for the
// kernels' tiles when a tile is a row, and too many dropped ones when
// tiles span the padded grid: ResNet-50's 3×3 layers of 14 and 7 pixels a
// row ran 8-15% slower so than from gathered rows, those of 56 pixels
// 14-17% faster, of 28 0-12%.
const minSegmentRow = 28

// paddedGeometry is where forwardSegments's padded copy of an image lies:
// rows hp of wp pixels of C values, the image at (top, left).
type paddedGeometry struct {
	hp, wp, top, left int
}

func paddingOf(g *Geometry) paddedGeometry {
	extent := func(i int) int { return (g.Out[i]-1)*g.Strides[i] + (g.Kernel[i]-1)*g.Dilations[i] + 1 }
	return paddedGeometry{hp: extent(0), wp: max(extent(1), g.In[1]+g.PadBegin[1]), top: g.PadBegin[0], left: g.PadBegin[1]}
}

// forwardSegments is forwardTo for the geometries segmentsFit admits; xt
// is the image channels-last.
func (cw *gemmWeights) forwardSegments(c *ops.Context, g *Geometry, xt, y []float32, o *output) error {
	pg := paddingOf(g)
	h, w, ch := g.In[0], g.In[1], g.C
	img := pg.hp * pg.wp * ch
	padded := c.Scratch(g.Batch * img)
	defer c.Free(padded)
	err := run(c, g.Batch*pg.hp, g.Batch*img*gatherCost, func(_ *gemm.Engine, _ *scratch, task int) error {
		b, py := task/pg.hp, task%pg.hp
		dst := padded[(b*pg.hp+py)*pg.wp*ch:][:pg.wp*ch]
		iy := py - pg.top
		if iy < 0 || iy >= h {
			clear(dst)
			return nil
		}
		cols := min(w, pg.wp-pg.left)
		clear(dst[:pg.left*ch])
		pixels := dst[pg.left*ch : (pg.left+cols)*ch]
		copy(pixels, xt[((b*h+iy)*w)*ch:][:cols*ch])
		clear(dst[(pg.left+cols)*ch:])
		return nil
	})
	if err != nil {
		return err
	}
	kh, kw := g.Kernel[0], g.Kernel[1]
	dh, dw := g.Dilations[0], g.Dilations[1]
	var segs []int
	if dw == 1 { // a kernel row's taps are adjacent pixels: one run
		for dy := 0; dy < kh; dy++ {
			segs = append(segs, dy*dh*pg.wp*ch)
		}
	} else {
		for dy := 0; dy < kh; dy++ {
			for dx := 0; dx < kw; dx++ {
				segs = append(segs, (dy*dh*pg.wp+dx*dw)*ch)
			}
		}
	}
	oh, ow, m := g.Out[0], g.Out[1], g.M
	outSize := oh * ow
	work := cw.work(g, true, true)
	var fin gemm.Finish
	finishes := o.productFinish(&fin)
	fin.Bias = o.bias // one group: all of it
	if g.Strides[0] == 1 && g.Strides[1] == 1 && !finishes {
		// Tiles of the padded grid's rows, up to the last output pixel.
		grid := (oh-1)*pg.wp + ow
		tile := splitTile(tileRows(m), grid, g.Batch, work)
		tiles := (grid + tile - 1) / tile
		return run(c, g.Batch*tiles, work, func(e *gemm.Engine, s *scratch, task int) error {
			b, i0 := task/tiles, task%tiles*tile
			n := min(tile, grid-i0)
			s.out = grow(s.out, n*m)
			a := padded[b*img+i0*ch : (b+1)*img]
			if err := e.MatMulSegments(a, n, ch, segs, cw.f[0], s.out, m); err != nil {
				return err
			}
			// Each output row's pixels in the tile, out of the buffer.
			for i := i0; i < i0+n; {
				yy, x := i/pg.wp, i%pg.wp
				if x >= ow {
					i += pg.wp - x
					continue
				}
				run := min(ow-x, i0+n-i)
				at := (b*outSize + yy*ow + x) * m
				copy(y[at:at+run*m], s.out[(i-i0)*m:(i-i0+run)*m])
				o.finishRows(g, y[at:at+run*m], b*outSize*m+(yy*ow+x)*m, run)
				i += run
			}
			return nil
		})
	}
	// Tiles of one output row each, split into pieces when rows are few,
	// written straight into the output; a stage the product finishes
	// (bias, residual, clamp) in its tiles as they are written.
	tile := splitTile(max(ow, 1), ow, g.Batch*oh, work)
	pieces := (ow + tile - 1) / tile
	lda := g.Strides[1] * ch
	cold := g.Batch*outSize*m*4 >= coldOutput
	return run(c, g.Batch*oh*pieces, work, func(e *gemm.Engine, s *scratch, task int) error {
		row, x0 := task/pieces, task%pieces*tile
		b, oy := row/oh, row%oh
		n := min(tile, ow-x0)
		a := padded[b*img+(oy*g.Strides[0]*pg.wp+x0*g.Strides[1])*ch : (b+1)*img]
		at := (b*outSize + oy*ow + x0) * m
		// Where the float kernels draw, each tile's product draws the
		// next's output rows instead (as forwardTo's tiles do): the
		// stem of ResNet-50 took 1.88-1.91 ms instead of 2.24-2.27
		// (one thread).
		draws := cold && finishes && e.Table().FDraws
		if cold && (!draws || task == 0) {
			var res []float32
			if o.res != nil {
				res = o.res[at:]
			}
			touchTile(e.Table(), y[at:], res, n, m, m)
		}
		if finishes {
			s.fin = fin
			if o.res != nil {
				s.fin.Res, s.fin.LDR = o.res[at:at+n*m], m
			}
			if next := at + n*m; draws && next < len(y) {
				s.fin.Draw = nextRows(y, o.res, next, min(next+n*m, len(y)))
			}
			err := e.MatMulSegmentsFinish(a, n, lda, segs, cw.f[0], y[at:at+n*m], m, &s.fin)
			s.fin = gemm.Finish{} // the pooled scratch keeps no operands alive
			return err
		}
		if err := e.MatMulSegments(a, n, lda, segs, cw.f[0], y[at:at+n*m], m); err != nil {
			return err
		}
		o.finishRows(g, y[at:at+n*m], at, n)
		return nil
	})
}

// finishRows finishes rows adjacent output rows dst of a channels-last
// output of one group, which start at index at of the output (where the
// residual, if any, has them), as many at once as o's repeated bias holds.
func (o *output) finishRows(g *Geometry, dst []float32, at, rows int) {
	m := g.M
	per := rows
	if o.bias != nil {
		per = len(o.biasRep) / m
	}
	for r := 0; r < rows; r += per {
		n := min(per, rows-r)
		var res []float32
		if o.res != nil {
			res = o.res[at+r*m:][:n*m]
		}
		rep, _ := o.tileBias(g, n)
		o.finish(dst[r*m:(r+n)*m], rep, res)
	}
}
