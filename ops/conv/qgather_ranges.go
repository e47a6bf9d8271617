package conv

import (
	"sync"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// The per-row path takes every im2col row's parameters before any tile
// quantizes a row. A row's range is the range of the pixels its taps read
// (and of 0), so the ranges of all rows are the kernel's window over the
// per-pixel ranges, which, like a max pool's, splits by axis: the window
// along the other axes is taken within each slice of the first axis (a
// row of a 2-D image) as the slice's pixel ranges are taken, then along
// the first axis. A 3×3 kernel combines six ranges a row that way, in
// loops over adjacent cells, where combining a row's nine taps' took
// their positions one by one; and the rows' parameters come in one loop,
// where each tile took its rows' one at a time, waiting on the divisions.

// rowParam is one im2col row's quantization parameters, quant.RowParams
// of its range.
type rowParam struct {
	scale, inv float32
	zp         int32
}

// rowRangeCost is the work of taking one row's parameters, in
// multiply-adds (a core does about 32 a cycle): combining its taps'
// ranges and RowParams's divisions, about 40 cycles (10 ns a row in
// BenchmarkQGatherRows's profile).
const rowRangeCost = 1280

// qparams holds the rows' parameters of the per-row path, reused call to
// call.
var qparams = sync.Pool{New: func() any { return new([]rowParam) }}

// prepareRowParams fills q.params with the parameters of every im2col row
// of xt's images: the rows of image b, output position p, group gi at
// (b·OutSize + p)·Group + gi. It returns errNonFinite for an image
// holding NaN or ±Inf.
func (q *qimage) prepareRowParams(c *ops.Context, xt []float32) error {
	g := q.t.g
	d, groups, cg := len(g.In), g.Group, g.cg()
	inRest, outRest := 1, 1 // positions of a slice of the first axis, in and out
	for i := 1; i < d; i++ {
		inRest *= g.In[i]
		outRest *= g.Out[i]
	}
	outSize := g.OutSize()
	q.pbuf = qparams.Get().(*[]rowParam)
	*q.pbuf = grow(*q.pbuf, g.Batch*outSize*groups)
	q.params = *q.pbuf

	// One buffer of keys, reused call to call, holds every stage: the
	// pixels' ranges (per image and position of the first axis, a slice
	// of the others), the window along the other axes (bySlice: the
	// ranges of the slice's output positions), and along the first the
	// rows' (where the pixels' were). A buffer a chunk (or a unit) was an
	// allocation for each, thousands of bytes a run.
	kbuf := qkeys.Get().(*[]int32)
	defer qkeys.Put(kbuf)
	pixelKeys, sliceKeys := 2*inRest*groups, 2*outRest*groups
	slices, rowsOut := g.Batch*g.In[0], g.Batch*g.Out[0]
	first := max(slices*pixelKeys, rowsOut*sliceKeys)
	*kbuf = grow(*kbuf, first+slices*sliceKeys)
	pixels, bySlice, rows := (*kbuf)[:first], (*kbuf)[first:], (*kbuf)[:first]
	err := c.ParallelFor(slices, len(xt)*quantizeCost, func(e *gemm.Engine, u0, u1 int) error {
		tb := e.Table()
		var bufs [2][]int32         // between the passes of three or more axes
		const block = 64            // pixels' ranges a call
		ranges := getBuf(2 * block) // pooled: an array here escapes into the table's kernel
		defer putBuf(ranges)
		lo, hi := ranges[:block], ranges[block:]
		for u := u0; u < u1; u++ {
			keys := pixels[u*pixelKeys : (u+1)*pixelKeys]
			px := xt[u*inRest*g.C : (u+1)*inRest*g.C]
			// Each pixel's group's range, a block of them a call: pixel p's
			// group gi is row p·Group + gi of Cg values.
			for r0, n := 0, inRest*groups; r0 < n; r0 += block {
				rows := min(block, n-r0)
				if tb.MinMaxRows(px[r0*cg:], cg, rows, cg, lo[:rows], hi[:rows]) >= 0 {
					return errNonFinite
				}
				for i := range rows {
					keys[2*(r0+i)], keys[2*(r0+i)+1] = orderKey(lo[i]), orderKey(hi[i])
				}
			}
			// Along axes d-1 … 1: keys holds the cells of axes 1 … a by input
			// position, those of the axes after a by output position.
			inner, other := groups, 0
			for a := d - 1; a >= 1; a-- {
				outer := 1
				for i := 1; i < a; i++ {
					outer *= g.In[i]
				}
				dst := bySlice[u*sliceKeys : (u+1)*sliceKeys]
				if a > 1 {
					bufs[other] = grow(bufs[other], 2*outer*g.Out[a]*inner)
					dst = bufs[other]
					other ^= 1
				}
				windowPass(dst, keys, outer, g.In[a], 0, g.Out[a], inner, g.Kernel[a], g.Strides[a], g.PadBegin[a], g.Dilations[a])
				keys = dst
				inner *= g.Out[a]
			}
			if d == 1 {
				copy(bySlice[u*sliceKeys:(u+1)*sliceKeys], keys)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	// The window along the first axis, and each row's parameters.
	return c.ParallelFor(rowsOut, g.Batch*outSize*groups*rowRangeCost, func(e *gemm.Engine, u0, u1 int) error {
		for u := u0; u < u1; u++ {
			b, o := u/g.Out[0], u%g.Out[0]
			ranges := rows[u*sliceKeys : (u+1)*sliceKeys]
			windowPass(ranges, bySlice[b*g.In[0]*sliceKeys:(b+1)*g.In[0]*sliceKeys], 1, g.In[0], o, o+1, sliceKeys/2, g.Kernel[0], g.Strides[0], g.PadBegin[0], g.Dilations[0])
			ps := q.params[u*outRest*groups : (u+1)*outRest*groups]
			for i := range ps {
				s, inv, zp := quant.RowParams(keyValue(ranges[2*i]), keyValue(ranges[2*i+1]))
				ps[i] = rowParam{scale: s, inv: inv, zp: zp}
			}
		}
		return nil
	})
}

// windowPass combines along one axis the ranges of src, outer×in×inner
// cells of a low and a high orderKey, into dst, outer×(o1-o0)×inner
// cells: output position o of the axis ranges over the cells o·stride −
// pad + k·dil (k < kernel) of src that lie in [0, in), and over 0 (a tap
// in the padding reads 0).
func windowPass(dst, src []int32, outer, in, o0, o1, inner, kernel, stride, pad, dil int) {
	n, w := o1-o0, 2*inner
	for a := 0; a < outer; a++ {
		s := src[a*in*w : (a+1)*in*w]
		for o := o0; o < o1; o++ {
			dc := dst[(a*n+o-o0)*w : (a*n+o-o0+1)*w]
			if inner == 1 { // a cell at a time: the loop below would run once a tap
				var lo, hi int32 // orderKey(0)
				for k := 0; k < kernel; k++ {
					if i := o*stride - pad + k*dil; i >= 0 && i < in {
						lo, hi = min(lo, s[2*i]), max(hi, s[2*i+1])
					}
				}
				dc[0], dc[1] = lo, hi
				continue
			}
			clear(dc) // orderKey(0)
			for k := 0; k < kernel; k++ {
				i := o*stride - pad + k*dil
				if i < 0 || i >= in {
					continue
				}
				sc := s[i*w : (i+1)*w]
				sc = sc[:len(dc)]
				for j := 0; j+1 < len(dc); j += 2 {
					dc[j] = min(dc[j], sc[j])
					dc[j+1] = max(dc[j+1], sc[j+1])
				}
			}
		}
	}
}
