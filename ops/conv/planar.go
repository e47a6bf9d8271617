package conv

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// An image's first convolution has a handful of input channels (3: RGB)
// and often few outputs: im2col rows of 27 values and 8 columns leave
// the product kernels mostly padding and the gather most of the time. It
// runs plane by plane instead: each output plane is its bias plus every
// input plane's taps, added by the table's DepthwiseRows with an output
// row as its "pixel" and the row's columns as its "channels". The input
// rows a block of output rows reads are laid out so that every tap of
// every output row is a unit-stride run at a fixed offset (zero-padded,
// the columns split into their stride's phases), and each tap's weight
// is spread along a row: the kernel keeps a block of output rows and
// columns in registers while all C·kh·kw taps are added.

// planarMaxChannels and planarMaxOutputs bound the convolutions run plane
// by plane: fewer input channels than the int8 tiles take
// (quantizeMinChannels), and outputs few enough that the product's panels
// would be mostly padding (a ResNet's 64 outputs multiply faster as a
// product).
const (
	planarMaxChannels = quantizeMinChannels - 1
	planarMaxOutputs  = 16
)

// planar reports a weight (M×C×kernel) of one group that runs plane by
// plane.
func planar(shape []int, group int) bool {
	return group == 1 && len(shape) >= 3 && len(shape) <= 4 &&
		shape[1] <= planarMaxChannels && shape[0] <= planarMaxOutputs
}

// phased is the layout of an input plane the planar convolution reads:
// its sw column phases, each rows rows of cols columns, where phase f's
// row r, column j holds the zero-padded plane's row r, column j·sw + f.
// Output row oy, column ox reads tap (ky, kx) at phase (kx·dw) mod sw,
// row oy·sh + ky·dh, column ox + ⌊kx·dw / sw⌋.
type phased struct {
	p          plane
	rows, cols int
}

// planeLayout returns p's phased layout, its rows a multiple of 16
// values long (the AVX-512 kernel's lines).
func (p *plane) planeLayout() phased {
	rows := (p.oh-1)*p.sh + (p.kh-1)*p.dh + 1
	cols := p.ow + (p.kw-1)*p.dw/p.sw
	return phased{p: *p, rows: rows, cols: (cols + 15) &^ 15}
}

// size is the values of one laid-out plane.
func (l *phased) size() int { return l.p.sw * l.rows * l.cols }

// offsets returns the offset of each tap of c input planes laid out
// one after another, in weight order (channel, kernel row, kernel
// column): what DepthwiseRows adds for output row 0, column 0.
func (l *phased) offsets(c int) []int {
	p := &l.p
	offs := make([]int, 0, c*p.kh*p.kw)
	for ch := range c {
		for ky := range p.kh {
			for kx := range p.kw {
				at := kx * p.dw
				offs = append(offs, ch*l.size()+(at%p.sw*l.rows+ky*p.dh)*l.cols+at/p.sw)
			}
		}
	}
	return offs
}

// block returns the layout of the rows that n consecutive output rows
// read: a phased of the same columns with just those rows.
func (l *phased) block(n int) phased {
	p := &l.p
	return phased{p: *p, rows: (n-1)*p.sh + (p.kh-1)*p.dh + 1, cols: l.cols}
}

// prepareRows writes the laid-out rows [r0, r0+l.rows) of every phase of
// the plane x into buf (size values, a block's layout: row r of phase f
// at (f·l.rows + r − r0)·l.cols): row r of phase f is the plane's row
// r − ph, its columns f − pw, f − pw + sw, ..., zeros outside the plane.
func (l *phased) prepareRows(tb *dispatch.Table, x, buf []float32, r0 int) {
	p := &l.p
	r1 := r0 + l.rows
	for f := range p.sw {
		for r := r0; r < r1; r++ {
			dst := buf[(f*l.rows+r-r0)*l.cols:][:l.cols]
			iy := r - p.ph
			if iy < 0 || iy >= p.h {
				clear(dst)
				continue
			}
			row := x[iy*p.w : (iy+1)*p.w]
			// Column j reads ix = j·sw + f − pw: inside the row for j in
			// [lo, hi).
			first := f - p.pw
			lo := 0
			if first < 0 {
				lo = (-first + p.sw - 1) / p.sw
			}
			hi := 0
			if p.w-1 >= first {
				hi = min(l.cols, (p.w-1-first)/p.sw+1)
			}
			if lo >= hi {
				clear(dst)
				continue
			}
			clear(dst[:lo])
			clear(dst[hi:])
			src := row[lo*p.sw+first:]
			if p.sw == 1 {
				copy(dst[lo:hi], src)
				continue
			}
			d := dst[lo:hi]
			if p.sw == 2 {
				tb.EveryOther(d, src)
				continue
			}
			for j, k := 0, 0; j < len(d) && k < len(src); j, k = j+1, k+p.sw {
				d[j] = src[k]
			}
		}
	}
}

// spread is the planar convolution's weights spread along its output
// rows, for one row width: output channel m's tap t repeated ow times at
// (m·taps + t)·ow.
type spread struct {
	ow int
	w  []float32
}

// spreadRows returns the weights of m output channels of taps taps each
// spread along output rows of ow columns, as DepthwiseRows reads them:
// made on the first run of a width and kept (a run of another width
// replaces them; concurrent runs share what they find).
func (dw *depthwiseWeights) spreadRows(m, taps, ow int) []float32 {
	if sp := dw.spread.Load(); sp != nil && sp.ow == ow {
		return sp.w
	}
	sp := &spread{ow: ow, w: make([]float32, m*taps*ow)}
	for i, v := range dw.w[:m*taps] {
		fill(sp.w[i*ow:(i+1)*ow], v)
	}
	dw.spread.Store(sp)
	return sp.w
}

// planarTo computes y = o.finish(conv(x)) plane by plane for a geometry of
// one group, x in NCHW, y as o says (NCHW or channels-last), a residual
// only in NCHW. A task is a block of an image's output rows: it lays out
// the input rows the block reads (phased, each channel's), adds every
// output channel's taps over them, and writes the block's positions
// channels-last when y is. A core thus reads only rows it laid out
// itself, and the block's rows stay in its cache from the layout to the
// output.
func (dw *depthwiseWeights) planarTo(c *ops.Context, g *Geometry, x, y []float32, o *output) error {
	inSize, outSize := g.InSize(), g.OutSize()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	p := plane2D(g)
	l := p.planeLayout()
	o.tb = c.Engine().Table()
	planes := y
	if o.nhwcOut {
		planes = c.Scratch(g.Batch * g.M * outSize)
		defer c.Free(planes)
	}
	br := planarBlockRows(p.oh, g.Batch, c.Engine().Threads())
	blocks := (p.oh + br - 1) / br
	full, last := l.block(br), l.block(p.oh-(blocks-1)*br)
	offsFull, offsLast := full.offsets(g.C), last.offsets(g.C)
	taps := len(offsFull)
	spread := dw.spreadRows(g.M, taps, p.ow)
	work := g.Batch*g.M*outSize*(taps*tapCost+finishCost) + g.Batch*g.C*l.size()*transposeCost
	if o.nhwcOut {
		work += g.Batch * g.M * outSize * transposeCost
	}
	return run(c, g.Batch*blocks, work, func(_ *gemm.Engine, s *scratch, task int) error {
		b, oy0 := task/blocks, task%blocks*br
		rows := min(br, p.oh-oy0)
		lb, offs := full, offsFull
		if rows != br {
			lb, offs = last, offsLast
		}
		size := lb.size()
		s.rows = grow(s.rows, g.C*size)
		prep := s.rows[:g.C*size]
		for ch := range g.C {
			lb.prepareRows(o.tb, x[(b*g.C+ch)*inSize:][:inSize], prep[ch*size:][:size], oy0*p.sh)
		}
		for m := range g.M {
			at := (b*g.M+m)*outSize + oy0*p.ow
			out := planes[at:][:rows*p.ow]
			var bv float32
			if o.bias != nil {
				bv = o.bias[m]
			}
			fill(out, bv)
			o.tb.DepthwiseRows(out, prep, spread[m*taps*p.ow:][:taps*p.ow], offs, p.sh*l.cols, p.ow)
			var res []float32
			if o.res != nil {
				res = o.res[at:][:len(out)]
			}
			o.finish(out, nil, res)
		}
		if o.nhwcOut {
			at := b * g.M * outSize
			o.tb.TransposeCols(y[at:at+g.M*outSize], planes[at:at+g.M*outSize], g.M, outSize, 0, oy0*p.ow, (oy0+rows)*p.ow)
		}
		return nil
	})
}

// planarBlockRows is how many output rows of a plane oh rows high a task
// of planarTo takes, for batch images on threads cores: eight, or four
// when eight would not give each core four blocks (a small image, or
// many cores), never fewer. Fewer rows cost more than the balance they
// buy: the kernel adds every tap to a block's rows together, and a block
// lays out the rows between its output rows and the next block's again
// (one of every 2·8+1 for a 3×3 window of stride 2). PaddleOCR's stem (24
// rows) in blocks of two took 53 µs on one core against 38 in blocks of
// four, and on two cores 29-32 µs against 22-24.
func planarBlockRows(oh, batch, threads int) int {
	br := 8
	if batch*((oh+br-1)/br) < 4*threads {
		br = 4
	}
	return min(br, max(oh, 1))
}
