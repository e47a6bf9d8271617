package conv

import (
	"sync/atomic"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// depthwiseWeights are a depthwise convolution's weights: M planes of
// kernel values (channel multiplier M/C).
type depthwiseWeights struct {
	w      []float32
	spread atomic.Pointer[spread] // a planar convolution's (spreadRows)
}

// forward computes y = conv(x) + bias for a depthwise geometry, one
// (image, output channel) plane per task, each row of taps on the
// engine's kernels.
func (dw *depthwiseWeights) forward(c *ops.Context, g *Geometry, x, bias, y []float32) error {
	return dw.forwardTo(c, g, x, y, &output{bias: bias})
}

// forwardTo is forward finished by o, whose layouts must be NCHW.
func (dw *depthwiseWeights) forwardTo(c *ops.Context, g *Geometry, x, y []float32, o *output) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	mg := g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	p := plane2D(g)
	o.tb = c.Engine().Table()
	taps := o.tb.ConvTaps
	finish := o.res != nil || o.act.kind != actNone
	// Per plane: its taps, its padded or phase-split copy, its finish.
	work := g.Batch * g.M * (outSize*kk*tapCost + p.phaseLen()*gatherCost + outSize*finishCost)
	return run(c, g.Batch*g.M, work, func(_ *gemm.Engine, s *scratch, task int) error {
		b, m := task/g.M, task%g.M
		ch := m / mg
		var bv float32
		if o.bias != nil {
			bv = o.bias[m]
		}
		s.part = grow(s.part, p.phaseLen())
		out := y[(b*g.M+m)*outSize:][:outSize]
		p.run(out, x[(b*g.C+ch)*inSize:][:inSize], dw.w[m*kk:][:kk], bv, s.part, taps)
		if finish {
			var res []float32
			if o.res != nil {
				res = o.res[(b*g.M+m)*outSize:][:outSize]
			}
			o.finish(out, nil, res)
		}
		return nil
	})
}

// plane is a 2-D single-channel convolution (1-D as height 1).
type plane struct {
	h, w, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw int
}

func plane2D(g *Geometry) plane {
	if len(g.In) == 1 {
		return plane{h: 1, w: g.In[0], oh: 1, ow: g.Out[0], kh: 1, kw: g.Kernel[0], sh: 1, sw: g.Strides[0], dh: 1, dw: g.Dilations[0], pw: g.PadBegin[0]}
	}
	return plane{h: g.In[0], w: g.In[1], oh: g.Out[0], ow: g.Out[1], kh: g.Kernel[0], kw: g.Kernel[1],
		sh: g.Strides[0], sw: g.Strides[1], dh: g.Dilations[0], dw: g.Dilations[1], ph: g.PadBegin[0], pw: g.PadBegin[1]}
}

// phaseLen is the scratch a plane needs: with unit stride along the
// row, its zero-padded copy (runPadded); otherwise its columns split into
// sw phases (the columns ≡ ph mod sw, each a unit-stride row).
func (p *plane) phaseLen() int {
	if p.sw == 1 {
		hp, wp := p.padDims()
		return hp * wp
	}
	return p.sw * p.h * p.phaseRow()
}

// padDims returns the rows and columns of the padded copy: every tap of
// every output falls inside it.
func (p *plane) padDims() (hp, wp int) {
	return (p.oh-1)*p.sh + (p.kh-1)*p.dh + 1, p.ow + (p.kw-1)*p.dw
}

// prepare writes what add reads of the plane x into buf (phaseLen
// values): with unit stride along the row, x with the padding as zeros
// (every tap of every output falls inside it); otherwise the columns of x
// split into sw phases, each a unit-stride row.
func (p *plane) prepare(x, buf []float32) {
	p.prepareRows(x, buf, 0, p.prepRows())
}

// fill sets every value of dst to v (bit for bit), by copies that double
// what is set.
func fill[T float32 | uint8 | int8](dst []T, v T) {
	if len(dst) == 0 {
		return
	}
	dst[0] = v
	for i := 1; i < len(dst); i *= 2 {
		copy(dst[i:], dst[:i])
	}
}

func (p *plane) phaseRow() int { return (p.w + p.sw - 1) / p.sw }

// run computes out (oh×ow) = b + Σ w·x over one plane.
func (p *plane) run(out, x, w []float32, b float32, buf []float32, taps func(dst, src, w []float32, step int)) {
	p.prepare(x, buf)
	fill(out[:p.oh*p.ow], b)
	p.add(out, w, buf, taps)
}

// add adds Σ w·x to out (oh×ow), x as prepare left it in buf, a kernel
// row at a time: with unit stride along the row, one taps call per output
// row and kernel row, with no border columns (the padding's products are
// zeros); with stride sw, each tap reads a unit-stride run of the phase
// its offset falls in.
func (p *plane) add(out, w, buf []float32, taps func(dst, src, w []float32, step int)) {
	if p.sw == 1 {
		_, wp := p.padDims()
		for oy := 0; oy < p.oh; oy++ {
			orow := out[oy*p.ow : (oy+1)*p.ow]
			for ky := 0; ky < p.kh; ky++ {
				py := oy*p.sh + ky*p.dh
				taps(orow, buf[py*wp:], w[ky*p.kw:(ky+1)*p.kw], p.dw)
			}
		}
		return
	}
	pl := p.phaseRow()
	for oy := 0; oy < p.oh; oy++ {
		orow := out[oy*p.ow : (oy+1)*p.ow]
		for ky := 0; ky < p.kh; ky++ {
			iy := oy*p.sh - p.ph + ky*p.dh
			if iy < 0 || iy >= p.h {
				continue
			}
			wrow := w[ky*p.kw : (ky+1)*p.kw]
			for kx := range wrow {
				off := kx*p.dw - p.pw
				ph, base := off%p.sw, floorDiv(off, p.sw)
				if ph < 0 {
					ph += p.sw
				}
				n := 0 // the phase's columns inside the row
				if ph < p.w {
					n = (p.w-1-ph)/p.sw + 1
				}
				lo, hi := max(0, -base), min(p.ow, n-base)
				if lo < hi {
					prow := buf[(ph*p.h+iy)*pl : (ph*p.h+iy+1)*pl]
					taps(orow[lo:hi], prow[lo+base:], wrow[kx:kx+1], 0)
				}
			}
		}
	}
}

// prepRows is the number of rows prepare writes: the padded copy's, or
// the input's (each split into its phases).
func (p *plane) prepRows() int {
	if p.sw == 1 {
		hp, _ := p.padDims()
		return hp
	}
	return p.h
}

// prepareRows is prepare on its rows [r0, r1) alone (see prepRows).
func (p *plane) prepareRows(x, buf []float32, r0, r1 int) {
	if p.sw == 1 {
		hp, wp := p.padDims()
		pad := buf[:hp*wp]
		left := min(p.pw, wp)
		n := max(0, min(p.w, wp-left))
		for py := r0; py < r1; py++ {
			row := pad[py*wp : (py+1)*wp]
			iy := py - p.ph
			if iy < 0 || iy >= p.h || n == 0 {
				clear(row)
				continue
			}
			clear(row[:left])
			copy(row[left:left+n], x[iy*p.w:iy*p.w+n])
			clear(row[left+n:])
		}
		return
	}
	pl := p.phaseRow()
	whole := p.w / p.sw // columns every phase has
	for iy := r0; iy < r1; iy++ {
		row := x[iy*p.w : (iy+1)*p.w]
		for ph := 0; ph < p.sw; ph++ {
			dst := buf[(ph*p.h+iy)*pl : (ph*p.h+iy+1)*pl]
			src := row[ph:]
			for j := range whole {
				dst[j] = src[j*p.sw]
			}
			for j := whole; j < pl; j++ {
				if c := j*p.sw + ph; c < p.w {
					dst[j] = row[c]
				} else {
					dst[j] = 0
				}
			}
		}
	}
}
