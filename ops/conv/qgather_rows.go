package conv

import (
	"errors"
	"math"
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// An int8 convolution's im2col rows repeat each input value once per
// kernel offset reading it (nine times for a 3×3 kernel at stride 1), so
// rather than gathering them as floats and quantizing each row, the tiles
// quantize them from the image itself, with the bytes, zero points and
// scales that gathering and quantizing them would give:
//
//   - static parameters (calibrated activations): the image is quantized
//     once, the padding standing for quantize(0), the zero point; the
//     rows are gathered from its bytes.
//   - per-row parameters: a row's range is the range of the pixels its
//     taps read (and 0 for a tap in the padding, which quant.RowParams
//     includes in every range anyway), so the range of each pixel's
//     channels is taken once, every row's parameters from its taps' ones
//     before any tile runs (qgather_ranges.go), and the row quantized
//     from the image tap by tap (a run of adjacent taps at a time) with
//     its own parameters.
//
// Where each pixel is read fewer than 1.5 times (a 1×1 kernel at stride
// 2), nothing is prepared: each row's range is taken tap by tap from the
// image, and the row quantized from it (qgather_lazy.go). An image holding
// NaN or ±Inf that is prepared goes the gathering way, which reports the
// row that holds it (or, when no row reads it, computes as ever); a row
// quantized as it is read reports it alike.

// qgatherMinCg is the fewest channels per group for which rows are
// quantized from the image with per-row parameters, or as they are read:
// a tap then quantizes with one call of the table's QuantizeU8 of at
// least this many values.
const qgatherMinCg = 8

// qimage is a batch of images channels-last made ready for their im2col
// rows to be quantized straight from them.
type qimage struct {
	t      *taps
	acts   []*gemm.Activations // static: one for all the images, or one an image (actOf); nil: per row
	img    int                 // values per image
	x      []float32           // the images
	lazy   bool                // nothing prepared: rows quantized as they are read
	u      []uint8             // static: the images quantized, each with its acts entry's parameters
	params []rowParam          // per row: per image, output position and group, its row's parameters
	ubuf   *[]uint8
	pbuf   *[]rowParam
}

// errNonFinite stops preparing an image that holds NaN or ±Inf.
var errNonFinite = errors.New("conv: image not finite")

// qbytes and qkeys hold the byte images of the static path and the ranges
// of the per-row one, reused call to call.
var (
	qbytes = sync.Pool{New: func() any { return new([]uint8) }}
	qkeys  = sync.Pool{New: func() any { return new([]int32) }}
)

// orderKey maps a finite float32 to an int32 of the same order (-0 just
// below +0), so that a row's range combines its taps' ones with integer
// min and max, which compile to conditional moves where float32 ones
// branch or mind NaN.
func orderKey(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ (b>>31)&0x7fffffff
}

// keyValue is the float32 whose orderKey is k.
func keyValue(k int32) float32 { return math.Float32frombits(uint32(k ^ (k>>31)&0x7fffffff)) }

// qimageOf returns xt (Batch images channels-last) ready for quantizing
// the rows of a convolution of cw's int8 weights, or nil when the rows
// are to be gathered and quantized as floats: float weights, activations
// being measured, a convolution whose rows are the image's own positions
// (direct), too few channels a group to quantize a tap at a time, or an
// image not finite (or, per image, of a range too narrow to quantize).
func (cw *gemmWeights) qimageOf(c *ops.Context, g *Geometry, t *taps, xt []float32, direct bool) (*qimage, error) {
	if cw.q == nil || direct || cw.act != nil && !cw.act.Static() {
		return nil, nil
	}
	static := cw.act.Static() || cw.perImage
	cg := g.cg()
	inSize := g.InSize()
	// Quantizing the image first quantizes (or takes the range of) every
	// pixel, read or not, where gathering touches only those read: with
	// a 1×1 kernel at stride 2, which reads a quarter of them, it takes
	// twice as long; with a 3×3 one at stride 1 (nine reads a pixel), a
	// quarter as long with static parameters, four fifths per row. Pixels
	// read fewer than 1.5 times each are quantized as rows read them.
	lazy := 2*g.OutSize()*len(t.lin) < 3*inSize
	if cg < qgatherMinCg && (lazy || !static) {
		return nil, nil
	}
	positions := g.Batch * inSize
	n := positions * g.C
	q := &qimage{t: t, img: inSize * g.C, x: xt[:n], lazy: lazy}
	switch {
	case cw.perImage: // an input layer, of fewer channels than qgatherMinCg: not lazy (above)
		var err error
		if q.acts, err = imageActivations(c, xt[:n], g.Batch); q.acts == nil {
			return nil, err
		}
	case static:
		q.acts = []*gemm.Activations{cw.act}
	}
	if lazy {
		return q, nil
	}
	var err error
	if static {
		q.ubuf = qbytes.Get().(*[]uint8)
		*q.ubuf = grow(*q.ubuf, n)
		q.u = *q.ubuf
		err = c.ParallelFor(positions, n*quantizeCost, func(e *gemm.Engine, p0, p1 int) error {
			if cw.perImage { // finite: imageActivations read every value
				for p := p0; p < p1; {
					b := p / inSize
					end := min(p1, (b+1)*inSize)
					q.acts[b].Quantize(e.Table(), xt[p*g.C:end*g.C], q.u[p*g.C:end*g.C])
					p = end
				}
				return nil
			}
			return e.QuantizeStatic(q.u[p0*g.C:p1*g.C], xt[p0*g.C:p1*g.C], cw.act)
		})
	} else {
		err = q.prepareRowParams(c, xt[:n])
	}
	if err != nil {
		q.free()
		if errors.Is(err, gemm.ErrNotFinite) || errors.Is(err, errNonFinite) {
			return nil, nil
		}
		return nil, err
	}
	return q, nil
}

// imageActivations returns the static parameters of each of batch
// images x (as many values each), their range taken now, across the
// engine's cores: rows quantized with them are each image's values on
// its own grid, whatever the batch holds besides. It is nil when an
// image holds NaN or ±Inf, or spans less than quant.MinScaleRange (every
// value would quantize to the zero point): the rows then quantize one by
// one, which reports the first and keeps the values of the second. The
// error is the request's, when it ends while the ranges are taken.
func imageActivations(c *ops.Context, x []float32, batch int) ([]*gemm.Activations, error) {
	img := len(x) / batch
	type span struct {
		lo, hi    float32 // from 0, which every range holds
		nonFinite bool
	}
	spans := make([]span, batch)
	var mu sync.Mutex
	err := c.ParallelFor(len(x), len(x)*ops.VectorCost, func(e *gemm.Engine, i0, i1 int) error {
		for i := i0; i < i1; {
			b := i / img
			end := min(i1, (b+1)*img)
			lo, hi, finite := e.Table().MinMax(x[i:end])
			mu.Lock()
			s := &spans[b]
			s.lo, s.hi, s.nonFinite = min(s.lo, lo), max(s.hi, hi), s.nonFinite || !finite
			mu.Unlock()
			i = end
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	acts := make([]*gemm.Activations, batch)
	for b, s := range spans {
		if s.nonFinite || s.hi-s.lo < quant.MinScaleRange {
			return nil, nil
		}
		a, err := gemm.StaticActivations(s.lo, s.hi)
		if err != nil {
			return nil, nil
		}
		acts[b] = a
	}
	return acts, nil
}

// actOf returns image b's static parameters, or nil: per row.
func (q *qimage) actOf(b int) *gemm.Activations {
	switch len(q.acts) {
	case 0:
		return nil
	case 1:
		return q.acts[0]
	}
	return q.acts[b]
}

// free gives back q's buffers.
func (q *qimage) free() {
	if q.ubuf != nil {
		qbytes.Put(q.ubuf)
		q.ubuf, q.u = nil, nil
	}
	if q.pbuf != nil {
		qparams.Put(q.pbuf)
		q.pbuf, q.params = nil, nil
	}
}

// rows quantizes into dst the im2col rows of output positions [p0, p0+n)
// of group gi of image b: the rows QuantizeRowsAs makes of the rows
// gatherRows gathers, byte for byte, with the same zero points and
// scales.
func (q *qimage) rows(tb *dispatch.Table, dst *gemm.QRows, b, gi, p0, n int) error {
	k := len(q.t.lin) * q.t.g.cg()
	u, ldu, err := dst.PrepareRows(n, k)
	if err != nil {
		return err
	}
	if q.lazy {
		return q.lazyRows(tb, dst, u, ldu, b, gi, p0, n)
	}
	if a := q.actOf(b); a != nil {
		if err := dst.SetStatic(a); err != nil {
			return err
		}
	}
	q.imageRows(tb, dst, u, ldu, b, gi, p0, n)
	return nil
}

// imageRows is rows from a prepared image: the interior rows in blocks,
// one call a block (GatherRunsU8 of the image's bytes with static
// parameters, QuantizeRunsU8 of its values with each row's own), the
// border rows tap by tap, a tap in the padding quantize(0), the zero
// point. A copy a run of the bytes took 65% of a 3×3 layer's rows'
// time on a 56×56 image of 64 channels, in the calls and the loop
// around them (BenchmarkQGatherRows).
func (q *qimage) imageRows(tb *dispatch.Table, dst *gemm.QRows, u []uint8, ldu, b, gi, p0, n int) {
	t := q.t
	g := t.g
	c, cg, groups := g.C, g.cg(), g.Group
	kk := len(t.lin)
	var xb []uint8   // static: the image's bytes
	var xg []float32 // per row: its values
	var params []rowParam
	var zp uint8 // quantize(0), the padding: static, or the border row's own
	if a := q.actOf(b); a != nil {
		_, _, z := a.Params()
		xb, zp = q.u[b*q.img+gi*cg:(b+1)*q.img], uint8(z)
	} else {
		xg = q.x[b*q.img+gi*cg : (b+1)*q.img]
		params = q.params[(b*g.OutSize()+p0)*groups:]
	}
	pos := t.pos(p0)
	w := t.run * cg // values per run
	blk := runBlocks.Get().(*runBlock)
	defer runBlocks.Put(blk)
	blk.offs = blk.offs[:0]
	for _, off := range t.runLin {
		blk.offs = append(blk.offs, off*c)
	}
	first := 0 // the block's first row
	flush := func() {
		switch {
		case len(blk.bases) == 0:
		case xb != nil:
			tb.GatherRunsU8(xb, blk.bases, blk.offs, w, u[first*ldu:], ldu)
		default:
			tb.QuantizeRunsU8(xg, blk.bases, blk.offs, w, blk.inv, blk.zp, u[first*ldu:], ldu)
		}
		blk.bases, blk.inv, blk.zp = blk.bases[:0], blk.inv[:0], blk.zp[:0]
	}
	step := t.lastStride() * c // from one output position's first value to the next's along the last axis
	for r := 0; r < n; r++ {
		if pos.interior {
			// The interior rows that follow along the last axis at once.
			if len(blk.bases) == 0 {
				first = r
			}
			run := pos.interiorRun(n - r)
			for i, at := r, pos.lin*c; i < r+run; i, at = i+1, at+step {
				blk.bases = append(blk.bases, at)
				if xb == nil {
					rp := params[i*groups+gi]
					dst.SetRowParams(i, rp.scale, rp.zp)
					blk.inv, blk.zp = append(blk.inv, rp.inv), append(blk.zp, rp.zp)
				}
			}
			pos.skip(run - 1)
			r += run - 1
			pos.next()
			continue
		}
		flush()
		var rp rowParam
		if xb == nil {
			rp = params[r*groups+gi]
			dst.SetRowParams(r, rp.scale, rp.zp)
			zp = uint8(rp.zp)
		}
		row := u[r*ldu : r*ldu+kk*cg]
		for kidx := 0; kidx < kk; kidx++ {
			seg := row[kidx*cg : (kidx+1)*cg]
			at := pos.at(kidx)
			switch {
			case at < 0:
				fill(seg, zp)
			case xb != nil:
				copy(seg, xb[at*c:at*c+cg])
			default:
				tb.QuantizeU8(xg[at*c:at*c+cg], rp.inv, rp.zp, seg)
			}
		}
		pos.next()
	}
	flush()
}

// runBlock is a block of interior rows waiting for one GatherRunsU8 or
// QuantizeRunsU8 call: each row's first value in the image (and
// parameters, per row), and the runs' offsets from it.
type runBlock struct {
	bases, offs []int
	inv         []float32
	zp          []int32
}

var runBlocks = sync.Pool{New: func() any { return new(runBlock) }}
