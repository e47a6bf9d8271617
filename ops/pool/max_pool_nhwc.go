package pool

import (
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
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
//
// With nchw_out it writes its output NCHW instead, [N, C, OH, OW],
// transposed from a channels-last scratch once pooled: the layout rule puts it after
// a fused convolution that writes channels-last when the pool's output
// goes on NCHW (to a graph output, or a flatten beside a global pool), so
// that the pool transposes its output rather than the convolution its
// input, four times as large under a pool of stride 2. The values are the
// same either way.
var MaxPoolNHWC = ops.Op{
	ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: "MaxPool", Since: 1}, buildMaxPoolNHWC),
}

// MaxPoolNHWCAttrs are quantserve.MaxPool's attributes: ONNX MaxPool's
// and the layout of its output.
type MaxPoolNHWCAttrs struct {
	MaxPoolAttrs
	NCHWOut bool `onnx:"nchw_out"`
}

// maxPoolNHWC is a compiled channels-last MaxPool.
type maxPoolNHWC struct {
	spec    *spec
	nchwOut bool
}

func buildMaxPoolNHWC(n *ops.Node, at *MaxPoolNHWCAttrs) (ops.Operator, error) {
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
	return &maxPoolNHWC{spec: s, nchwOut: at.NCHWOut}, nil
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
	if !o.nchwOut {
		if err := maxPoolChannelsLast(c, x.Data.([]float32), y, g); err != nil {
			return nil, err
		}
		return []*tensor.Tensor{{DType: tensor.Float32, Shape: []int{n, oh, ow, ch}, Data: y}}, nil
	}
	pooled := c.Scratch(len(y))
	defer c.Free(pooled)
	if err := maxPoolChannelsLast(c, x.Data.([]float32), pooled, g); err != nil {
		return nil, err
	}
	if err := transposeImages(c, y, pooled, n, oh*ow, ch); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: tensor.Float32, Shape: []int{n, ch, oh, ow}, Data: y}}, nil
}

// transposeImages sets y (n images of ch planes of pixels values) to x
// (n images of pixels rows of ch values) transposed, in blocks of
// channels spread over the engine's cores.
func transposeImages(c *ops.Context, y, x []float32, n, pixels, ch int) error {
	const block = 64 // channels a unit
	blocks := (ch + block - 1) / block
	tb := c.Engine().Table()
	return c.ParallelFor(n*blocks, n*pixels*ch*ops.VectorCost, func(_ *gemm.Engine, u0, u1 int) error {
		for u := u0; u < u1; u++ {
			b, c0 := u/blocks, u%blocks*block
			img := b * pixels * ch
			tb.TransposeCols(y[img:img+pixels*ch], x[img:img+pixels*ch], pixels, ch, 0, c0, min(c0+block, ch))
		}
		return nil
	})
}

// maxPoolChannelsLast sets y (N×OH×OW×C) to the 2-D max pool of x
// (N×H×W×C) as g lays its windows. A task is a block of an output row's
// pixels; a row is one block unless the rows are too few to keep the
// cores busy (a network's last pool, of one or two rows).
func maxPoolChannelsLast(c *ops.Context, x, y []float32, g *Geometry) error {
	h, w, oh, ow, ch := g.In[0], g.In[1], g.Out[0], g.Out[1], g.C
	if len(y) == 0 {
		return nil
	}
	tb := c.Engine().Table()
	blocks := 1 // of each output row
	if rows := g.N * oh; rows < minPoolTasks {
		blocks = min(ow, (minPoolTasks+rows-1)/rows)
	}
	cost := (g.Kernel[0]*w + g.Kernel[1]*ow) * ch * ops.VectorCost / blocks
	low := float32(math.Inf(-1))
	// The output columns whose windows lie inside the row, [ox0, ox1):
	// one MaxCols call a block; those at the row's ends go pixel by pixel.
	kw, sx, px, dx := g.Kernel[1], g.Strides[1], g.PadBegin[1], g.Dilations[1]
	ox0, ox1 := (px+sx-1)/sx, 0
	if last := w - 1 + px - (kw-1)*dx; last >= 0 {
		ox1 = min(last/sx+1, ow)
	}
	return c.ParallelRows(g.N*oh*blocks, cost, func(t0, t1 int) {
		row := c.Scratch(w * ch)
		defer c.Free(row)
		for t := t0; t < t1; t++ {
			r, blk := t/blocks, t%blocks
			b, oy := r/oh, r%oh
			o0, o1 := blk*ow/blocks, (blk+1)*ow/blocks
			out := y[r*ow*ch : (r+1)*ow*ch]
			// The input columns the block's windows read, [ix0, ix1).
			ix0, ix1 := max(0, o0*sx-px), min(w, (o1-1)*sx-px+(kw-1)*dx+1)
			// The window's input rows over them, reduced to one: the
			// first two valid ones into row at once, the others into it.
			var first []float32
			rows := 0
			for ky := 0; ky < g.Kernel[0] && ix0 < ix1; ky++ {
				iy := oy*g.Strides[0] - g.PadBegin[0] + ky*g.Dilations[0]
				if iy < 0 || iy >= h {
					continue
				}
				at := (b*h + iy) * w * ch
				first = maxFold(tb, row[:(ix1-ix0)*ch], first, x[at+ix0*ch:at+ix1*ch], rows)
				rows++
			}
			reduced := row
			if rows == 1 { // the row as it is
				reduced = first
			}
			col := func(ix int) []float32 { return reduced[(ix-ix0)*ch:] } // input column ix of reduced
			// The block's columns MaxCols takes, [in0, in1).
			in0, in1 := max(o0, ox0), min(o1, ox1)
			if in0 < in1 && rows > 0 {
				tb.MaxCols(out[in0*ch:], col(in0*sx-px), in1-in0, ch, sx*ch, kw, dx*ch)
			} else {
				in0, in1 = o1, o1
			}
			// The others, at the row's ends (all of them without an inside run).
			for _, span := range [2][2]int{{o0, in0}, {in1, o1}} {
				for ox := span[0]; ox < span[1]; ox++ {
					dst := out[ox*ch : (ox+1)*ch]
					var one []float32
					cols := 0
					for kx := 0; kx < g.Kernel[1] && rows > 0; kx++ {
						ix := ox*g.Strides[1] - g.PadBegin[1] + kx*g.Dilations[1]
						if ix < 0 || ix >= w {
							continue
						}
						one = maxFold(tb, dst, one, col(ix)[:ch], cols)
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

// minPoolTasks is the fewest tasks a channels-last max pool makes: rows
// of output pixels, split into blocks of pixels when there are fewer.
const minPoolTasks = 8

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
