package conv

import (
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
)

// An image's first convolution has a handful of input channels (3: RGB)
// and often few outputs: im2col rows of 27 values and 8 columns leave
// the product kernels mostly padding and the gather most of the time. It
// runs plane by plane instead, as a depthwise convolution does: each
// output plane is its bias plus every input plane's taps.

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

// planarTo computes y = o.finish(conv(x)) plane by plane for a geometry of
// one group, x in NCHW, y as o says (NCHW or channels-last), a residual
// only in NCHW. Each input plane is prepared (padded or split into
// phases) once, then each (image, output channel) plane is a task.
func (dw *depthwiseWeights) planarTo(c *ops.Context, g *Geometry, x, y []float32, o *output) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	p := plane2D(g)
	pl := p.phaseLen()
	o.tb = c.Engine().Table()
	taps := o.tb.ConvTaps
	prep := c.Scratch(g.Batch * g.C * pl)
	defer c.Free(prep)
	// A few input planes (3: RGB) split by rows.
	rows := p.prepRows()
	err := run(c, g.Batch*g.C*rows, g.Batch*g.C*pl*transposeCost, func(_ *gemm.Engine, _ *scratch, task int) error {
		i, r := task/rows, task%rows
		p.prepareRows(x[i*inSize:][:inSize], prep[i*pl:][:pl], r, r+1)
		return nil
	})
	if err != nil {
		return err
	}
	planes := y
	if o.nhwcOut {
		planes = c.Scratch(g.Batch * g.M * outSize)
		defer c.Free(planes)
	}
	work := g.Batch * g.M * outSize * (g.C*kk*tapCost + finishCost)
	err = run(c, g.Batch*g.M, work, func(_ *gemm.Engine, _ *scratch, task int) error {
		b, m := task/g.M, task%g.M
		out := planes[task*outSize:][:outSize]
		var bv float32
		if o.bias != nil {
			bv = o.bias[m]
		}
		fill(out, bv)
		for ch := 0; ch < g.C; ch++ {
			p.add(out, dw.w[(m*g.C+ch)*kk:][:kk], prep[(b*g.C+ch)*pl:][:pl], taps)
		}
		var res []float32
		if o.res != nil {
			res = o.res[task*outSize:][:outSize]
		}
		o.finish(out, nil, res)
		return nil
	})
	if err != nil || !o.nhwcOut {
		return err
	}
	for b := 0; b < g.Batch; b++ {
		at := b * g.M * outSize
		if err := transposeTo(c, y[at:at+g.M*outSize], planes[at:at+g.M*outSize], g.M, outSize); err != nil {
			return err
		}
	}
	return nil
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
