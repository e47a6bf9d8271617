package conv

import (
	"errors"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops"
)

// forward computes y (Batch×M×OutSize) = conv(x (Batch×C×InSize)) + bias
// (nil or M values) on the kernels.
func (cw *gemmWeights) forward(c *ops.Context, g *Geometry, x, bias, y []float32) error {
	return cw.forwardTo(c, g, x, y, &output{bias: bias})
}

// forwardTo computes y = o.finish(conv(x)) on the kernels, x and y laid out
// as o says. Tasks are tiles of output positions of one group of one
// image; with y channels-last the kernels write each tile's product into
// y itself (row stride M), and the tile is finished in place.
func (cw *gemmWeights) forwardTo(c *ops.Context, g *Geometry, x, y []float32, o *output) error {
	inSize, outSize := g.InSize(), g.OutSize()
	mg := g.mg()
	tb := c.Engine().Table()
	o.tb = tb
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	// An output over its residual (output.writesOverResidual) runs on
	// the tiles that finish as they write; any other path would write a
	// value before adding its residual.
	over := sameBuffer(y, o.res)
	if over && (cw.k == 0 || inSize == 1 && outSize == 1 || cw.segmentsFit(g, o)) {
		return errOverResidual
	}
	if cw.k == 0 { // no input channels: the bias alone
		clear(y)
		o.finishAll(g, y)
		return nil
	}
	taps := tapsOf(g)
	direct := g.direct()
	if inSize == 1 && outSize == 1 && g.Group == 1 && direct {
		return cw.pointwise(c, g, x, y, o)
	}
	work := cw.work(g, direct, o.nhwcIn)
	tile := splitTile(tileRows(max(cw.k, cw.n)), outSize, g.Batch*g.Group, work)
	big := cw.q == nil && cw.k*cw.n >= bigWeights
	if big {
		tile = max(tile, min(outSize, bigTileRows))
	}
	// A product whose tiles stream big weights from memory takes the
	// rows of all images together when an image has fewer than a tile
	// (ResNet-50's 14×14 and 7×7 layers in a batch), channels-last, so
	// each tile's rows continue across images in the input and output
	// alike: the weights stream once a tile, not once an image. The tiles
	// are a multiple of the cores when more than one a core.
	images, span := g.Batch, outSize // tiles are of span rows of one of images
	if big && g.Batch > 1 && g.Group == 1 && o.nhwcOut && o.xscale == nil && outSize < bigTileRows {
		images, span = 1, g.Batch*outSize
		n := (span + bigTileRows - 1) / bigTileRows
		if t := c.Engine().Threads(); n > t { // as many tiles for every core
			n = (n + t - 1) / t * t
		}
		tile = (span + n - 1) / n
	}
	tiles := (span + tile - 1) / tile
	img := inSize * g.C
	xt := x
	if !o.nhwcIn {
		xt = c.Scratch(g.Batch * img)
		defer c.Free(xt)
		for b := 0; b < g.Batch; b++ {
			var scale []float32 // as Mul does, before the product
			if o.xscale != nil {
				scale = o.xscale[b*g.C : (b+1)*g.C]
			}
			if err := transposeScaled(c, xt[b*img:], x[b*img:], g.C, inSize, scale); err != nil {
				return err
			}
		}
	}
	if cw.segmentsFit(g, o) {
		return cw.forwardSegments(c, g, xt, y, o)
	}
	qi, err := cw.qimageOf(c, g, taps, xt, direct)
	if err != nil {
		return err
	}
	if qi != nil {
		defer qi.free()
	}
	per := tiles * g.Group
	taskImg := img * (span / outSize) // the values of the images one task's tiles read
	cold := o.nhwcOut && g.Batch*outSize*g.M*4 >= coldOutput
	return run(c, images*per, work, func(e *gemm.Engine, s *scratch, task int) error {
		b, gi, p0 := task/per, task%per/tiles, task%tiles*tile
		n := min(tile, span-p0)
		xb := xt[b*taskImg : (b+1)*taskImg]
		var rows []float32 // nil: quantized into s.qrows from the image
		if qi != nil {
			if err := qi.rows(e.Table(), &s.qrows, b, gi, p0, n); err != nil {
				return err
			}
		} else if direct {
			rows = xb[p0*g.C : (p0+n)*g.C]
			if o.xscale != nil && o.nhwcIn { // as Mul does, before the product
				s.rows = grow(s.rows, len(rows))
				copy(s.rows, rows)
				rows = s.rows[:len(rows)]
				e.Table().ScaleRows(rows, o.xscale[b*g.C:(b+1)*g.C])
			}
		} else {
			s.rows = grow(s.rows, n*cw.k)
			rows = s.rows
			if !big {
				taps.gatherImages(rows, xb, img, outSize, gi, p0, n)
			} else if err := e.Parallel(n, n*cw.k*gatherCost, func(_ *gemm.Engine, i0, i1 int) error {
				// A big tile gathers across the cores its product
				// splits over.
				taps.gatherImages(rows[i0*cw.k:], xb, img, outSize, gi, p0+i0, i1-i0)
				return nil
			}); err != nil {
				return err
			}
		}
		m0 := gi * mg
		var bias []float32
		if o.bias != nil {
			bias = o.bias[m0 : m0+mg]
		}
		yb := y[b*span*g.M : (b+1)*span*g.M]
		finishes, rest := o.productFinishRest(&s.fin)
		finishes = finishes && o.nhwcOut
		// Where the float kernels draw (FDraws), a tile's product draws
		// the next tile's output and residual rows toward the cache
		// while it multiplies (gemm.Finish.Draw), and only an image's
		// first tile touches its own: ResNet-50's first-stage 1×1
		// layers of 256 channels took 800-960 µs instead of
		// 1,030-1,380 (one thread).
		draws := cold && finishes && cw.q == nil && tb.FDraws && mg == g.M
		// An output over its residual is not touched: each of its lines
		// is read before it is written, so a touch would only wait for
		// lines coming anyway (gemm's products alike).
		if cold && !over && (!draws || p0 == 0) {
			var res []float32
			if o.res != nil {
				res = o.res[(b*span+p0)*g.M+m0:]
			}
			touchTile(tb, yb[p0*g.M+m0:], res, n, mg, g.M)
		}
		if finishes {
			// The product finishes each row tile as it writes it, up to
			// the clamp (the bias, before a pair before the residual);
			// the rest of the stage follows on the tile.
			s.fin.Bias, s.fin.Res, s.fin.LDR = bias, nil, 0
			if p1 := p0 + tile; draws && p1 < span {
				s.fin.Draw = nextRows(y, o.res, (b*span+p1)*g.M, (b*span+min(p1+tile, span))*g.M)
			}
			var res []float32 // the tile's residual rows, for finishRest when it adds them
			out := yb[p0*g.M+m0:]
			sums := out // where the product writes the tile
			// Over its residual with a pair before it (one group:
			// writesOverResidual), the product writes a scratch tile,
			// which the finish adds to the residual in place (finishOver).
			inPlace := over && o.residualLater()
			if inPlace && mg != g.M {
				return errOverResidual
			}
			switch {
			case inPlace:
				s.out = grow(s.out, n*mg)
				sums = s.out[:n*mg]
			case o.res != nil:
				tile := o.res[(b*span+p0)*g.M+m0:][:(n-1)*g.M+mg]
				if o.residualLater() {
					res = tile
				} else {
					s.fin.Res, s.fin.LDR = tile, g.M
				}
			}
			err := cw.gemmFinishTo(e, s, gi, rows, n, sums, g.M, &s.fin)
			s.fin = gemm.Finish{} // the pooled scratch keeps no operands alive
			if err != nil || !rest {
				return err
			}
			if inPlace {
				o.finishOver(out[:n*mg], sums)
				return nil
			}
			if mg == g.M { // one group: the tile's rows are adjacent
				o.finishRest(out[:n*mg], res)
				return nil
			}
			for r := range n {
				var rr []float32
				if res != nil {
					rr = res[r*g.M:][:mg]
				}
				o.finishRest(out[r*g.M:][:mg], rr)
			}
			return nil
		}
		if over {
			return errOverResidual
		}
		if o.nhwcOut {
			if err := cw.gemmTo(e, s, gi, rows, n, yb[p0*g.M+m0:], g.M); err != nil {
				return err
			}
			if rep, ok := o.tileBias(g, n); ok { // the tile's rows are adjacent: one pass
				at := p0 * g.M
				var res []float32
				if o.res != nil {
					res = o.res[b*span*g.M+at:][:n*mg]
				}
				o.finish(yb[at:at+n*mg], rep, res)
				return nil
			}
			for r := p0; r < p0+n; r++ {
				at := r*g.M + m0
				var res []float32
				if o.res != nil {
					res = o.res[b*span*g.M+at:][:mg]
				}
				o.finish(yb[at:at+mg], bias, res)
			}
			return nil
		}
		s.out = grow(s.out, n*mg)
		if err := cw.gemmTo(e, s, gi, rows, n, s.out, mg); err != nil {
			return err
		}
		// Finished in the tile, but for an NCHW residual, which is added
		// to the planes (then the activation).
		inTile := o.res == nil || o.nhwcRes
		rep, whole := o.tileBias(g, n)
		whole = whole && inTile
		if whole {
			var res []float32
			if o.res != nil {
				res = o.res[(b*outSize+p0)*g.M:][:n*mg]
			}
			o.finish(s.out[:n*mg], rep, res)
		}
		for r := 0; r < n && !whole; r++ {
			var res []float32
			if o.res != nil && o.nhwcRes {
				res = o.res[(b*outSize+p0+r)*g.M+m0:][:mg]
			}
			if inTile {
				o.finish(s.out[r*mg:(r+1)*mg], bias, res)
			} else if bias != nil {
				addTo(s.out[r*mg:(r+1)*mg], bias)
			}
		}
		transposeStrided(tb, yb[m0*outSize+p0:], outSize, s.out, mg, n, mg)
		if !inTile {
			for co := 0; co < mg; co++ {
				at := (m0+co)*outSize + p0
				var res []float32
				if o.res != nil {
					res = o.res[b*outSize*g.M+at:][:n]
				}
				o.finish(yb[at:at+n], nil, res)
			}
		}
		return nil
	})
}

// errOverResidual is what a convolution returns that would write its
// output over its residual on a path that cannot: a fault of the caller's
// (fusedConv.run's) choice, never a value computed wrong.
var errOverResidual = errors.New("conv: an output over its residual on a path that writes before it adds")

// bigWeights is the size (values) from which a float convolution's
// weights outgrow a core's second-level cache, and bigTileRows the
// output positions its tiles then take (all of an image's, up to it):
// each tile streams the weights through the kernels once more, and
// ResNet-50's 7×7 layers (4.6 million weights), in tiles of 24 rows,
// streamed them from memory three times an image, the last for one row,
// and ran 15% slower than in one tile of 49. The tile's product splits
// across cores by its columns as a one-tile convolution's does, and its
// gather too.
const (
	bigWeights  = 1 << 18
	bigTileRows = 256
)

// pointwise is forwardTo for one position per image (an SE block's
// squeeze and excite, on a pooled vector): x is Batch×C and y Batch×M in
// either layout, so the convolution is one product of Batch rows on the
// caller, with no layout change and no tiles, finished row by row.
func (cw *gemmWeights) pointwise(c *ops.Context, g *Geometry, x, y []float32, o *output) error {
	a := x[:g.Batch*g.C]
	if o.xscale != nil { // as Mul does, before the product
		a = c.Scratch(len(a))
		defer c.Free(a)
		copy(a, x)
		o.tb.ScaleRows(a, o.xscale[:len(a)])
	}
	s := getScratch()
	defer putScratch(s)
	if err := cw.gemmTo(c.Engine(), s, 0, a, g.Batch, y, g.M); err != nil {
		return err
	}
	for b := 0; b < g.Batch; b++ {
		var res []float32
		if o.res != nil {
			res = o.res[b*g.M : (b+1)*g.M]
		}
		o.finish(y[b*g.M:(b+1)*g.M], o.bias, res)
	}
	return nil
}

// work is the cost of the convolution in units of a float32 multiply-add
// (gemm.MinParallelWork): the product, whose kernels compute whole panels
// of columns and pay a block's fixed cost per value they write (an int8
// multiply-add a quarter of a float32 one, its rows quantized first), the
// image moved channels-last or its im2col rows gathered, and every output
// value finished and moved to its layout.
func (cw *gemmWeights) work(g *Geometry, direct, nhwcIn bool) int {
	positions := g.Batch * g.OutSize()
	inputs := positions * cw.k * g.Group // the im2col values
	cols := (g.mg() + kernels.PanelN - 1) / kernels.PanelN * kernels.PanelN
	k := cw.k
	if cw.q != nil {
		k = k/gemm.QMACsPerUnit + quantizeCost
	}
	w := positions * g.Group * cols * (k + blockCost)
	if !nhwcIn {
		w += g.Batch * g.InSize() * g.C * gatherCost
	}
	if !direct {
		w += inputs * gatherCost
	}
	return w + positions*g.M*finishCost
}

// gemmTo computes group gi's product of m rows a into c (row stride ldc)
// on e; a nil a with int8 weights: of the rows s.qrows holds.
func (cw *gemmWeights) gemmTo(e *gemm.Engine, s *scratch, gi int, a []float32, m int, c []float32, ldc int) error {
	return cw.gemmFinishTo(e, s, gi, a, m, c, ldc, nil)
}

// gemmFinishTo is gemmTo finishing the product's rows as fin says
// (gemm.Engine.QMatMulRowsFinish, MatMulStridedFinish; nil: not at all).
func (cw *gemmWeights) gemmFinishTo(e *gemm.Engine, s *scratch, gi int, a []float32, m int, c []float32, ldc int, fin *gemm.Finish) error {
	if m == 0 {
		return nil
	}
	if cw.q != nil {
		w := cw.q[gi]
		if a == nil {
			return e.QMatMulRowsFinish(&s.qrows, w, c, ldc, fin)
		}
		if err := e.QuantizeRowsAs(&s.qrows, a, m, w.K, w.K, cw.act); err != nil {
			if errors.Is(err, gemm.ErrNotFinite) {
				return ops.InputErrorf("%v", err)
			}
			return err
		}
		return e.QMatMulRowsFinish(&s.qrows, w, c, ldc, fin)
	}
	w := cw.f[gi]
	return e.MatMulStridedFinish(a, m, w.K, w, c, ldc, fin)
}
