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
	o.tb = engine(c).Table()
	taps := o.tb.ConvTaps
	prep := c.Scratch(g.Batch * g.C * pl)
	defer c.Free(prep)
	err := run(c, g.Batch*g.C, g.Batch*g.C*pl*gatherCost, func(_ *gemm.Engine, _ *scratch, task int) error {
		p.prepare(x[task*inSize:][:inSize], prep[task*pl:][:pl])
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
