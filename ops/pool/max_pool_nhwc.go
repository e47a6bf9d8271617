package pool

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.MaxPool is the ONNX MaxPool (its Y output, 2-D windows) over
// a channels-last image: float32 [N, H, W, C] in, [N, OH, OW, C] out, as
// the ONNX operator gives for the same image in NCHW, with its bits. The
// graph compiler's layout rule puts it between a fused convolution that
// writes channels-last and fused convolutions that read so (a ResNet's
// stem), so neither side transposes its image.
//
// Each output row is one task: the window's input rows are reduced to one
// row first (tb.MaxPair on whole rows of W·C values), then each output
// pixel takes the maximum of its window's columns of that row (C values
// a call). The maximum is Go's max (NaN if any value is), in any order the
// same bits; a window over padding only is −Inf.
var MaxPoolNHWC = ops.Op{
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "MaxPool", Since: 1}, buildMaxPoolNHWC),
}

// maxPoolNHWC is a compiled channels-last MaxPool.
type maxPoolNHWC struct {
	spec *spec
}

func buildMaxPoolNHWC(n *ops.Node, at *MaxPoolAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	s, err := at.spec("MaxPool")
	if err != nil {
		return nil, err
	}
	if len(s.kernel) != 2 {
		return nil, ops.InputErrorf("MaxPool (channels-last) pools 2-D windows, got a %d-D kernel", len(s.kernel))
	}
	return &maxPoolNHWC{spec: s}, nil
}

func (o *maxPoolNHWC) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.DType != tensor.Float32 {
		return nil, ops.InputErrorf("MaxPool (channels-last) takes float32, got %v", x.DType)
	}
	if x.Rank() != 4 {
		return nil, ops.InputErrorf("MaxPool (channels-last) takes a rank-4 input (N, H, W, C), got shape %v", x.Shape)
	}
	n, h, w, ch := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	g, err := o.spec.geometry([]int{n, ch, h, w})
	if err != nil {
		return nil, err
	}
	oh, ow := g.Out[0], g.Out[1]
	y := c.Float32Output(n * oh * ow * ch)
	if err := maxPoolChannelsLast(c, x.Data.([]float32), y, g); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Float32, Shape: []int{n, oh, ow, ch}, Data: y}}, nil
}

// maxPoolChannelsLast sets y (N×OH×OW×C) to the 2-D max pool of x
// (N×H×W×C) as g lays its windows.
func maxPoolChannelsLast(c *ops.Context, x, y []float32, g *Geometry) error {
	h, w, oh, ow, ch := g.In[0], g.In[1], g.Out[0], g.Out[1], g.C
	if len(y) == 0 {
		return nil
	}
	tb := c.Engine().Table()
	cost := (g.Kernel[0]*w + g.Kernel[1]*ow) * ch * ops.VectorCost
	low := float32(math.Inf(-1))
	// The output columns whose windows lie inside the row, [ox0, ox1):
	// one MaxCols call a row; those at its ends go pixel by pixel.
	kw, sx, px, dx := g.Kernel[1], g.Strides[1], g.PadBegin[1], g.Dilations[1]
	ox0, ox1 := (px+sx-1)/sx, 0
	if last := w - 1 + px - (kw-1)*dx; last >= 0 {
		ox1 = min(last/sx+1, ow)
	}
	return c.ParallelRows(g.N*oh, cost, func(r0, r1 int) {
		row := c.Scratch(w * ch)
		defer c.Free(row)
		for r := r0; r < r1; r++ {
			b, oy := r/oh, r%oh
			out := y[r*ow*ch : (r+1)*ow*ch]
			// The window's input rows, reduced to one: the first two
			// valid ones into row at once, the others into it.
			var first []float32
			rows := 0
			for ky := 0; ky < g.Kernel[0]; ky++ {
				iy := oy*g.Strides[0] - g.PadBegin[0] + ky*g.Dilations[0]
				if iy < 0 || iy >= h {
					continue
				}
				first = maxFold(tb, row, first, x[(b*h+iy)*w*ch:(b*h+iy+1)*w*ch], rows)
				rows++
			}
			reduced := row
			if rows == 1 { // the row as it is
				reduced = first
			}
			in0, in1 := ow, ow // the columns MaxCols took, none yet
			if ox1 > ox0 && rows > 0 {
				tb.MaxCols(out[ox0*ch:], reduced[(ox0*sx-px)*ch:], ox1-ox0, ch, sx*ch, kw, dx*ch)
				in0, in1 = ox0, ox1
			}
			// The columns at the row's ends (all of them without an inside run).
			for _, span := range [2][2]int{{0, in0}, {in1, ow}} {
				for ox := span[0]; ox < span[1]; ox++ {
					dst := out[ox*ch : (ox+1)*ch]
					var one []float32
					cols := 0
					for kx := 0; kx < g.Kernel[1] && rows > 0; kx++ {
						ix := ox*g.Strides[1] - g.PadBegin[1] + kx*g.Dilations[1]
						if ix < 0 || ix >= w {
							continue
						}
						one = maxFold(tb, dst, one, reduced[ix*ch:(ix+1)*ch], cols)
						cols++
					}
					switch cols {
					case 0:
						for i := range dst {
							dst[i] = low
						}
					case 1:
						copy(dst, one)
					}
				}
			}
		}
	})
}

// maxFold folds src, the n-th valid tap of a window (from 0), into a
// running maximum: the first is kept as it lies (returned as first, dst
// untouched), the second sets dst to the maximum of the two, later ones
// fold into dst, all with Go's max's bits (tb.MaxPair).
func maxFold(tb *dispatch.Table, dst, first, src []float32, n int) []float32 {
	switch n {
	case 0:
		return src
	case 1:
		tb.MaxPair(dst, first, src)
	default:
		tb.MaxPair(dst, dst, src)
	}
	return first
}
