package pool

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// maxPoolAttr is the largest kernel, stride, dilation or pad accepted:
// every product of two of them fits an int.
const maxPoolAttr = tensor.MaxElements

// spec is a pooling node's validated window attributes.
type spec struct {
	op                         string
	autoPad                    string
	kernel, strides, dilations []int
	pads                       []int // begins then ends
	ceil                       bool
}

// newSpec validates the window attributes of the pooling node op.
func newSpec(op, autoPad string, kernel, pads, strides, dilations []int64, ceil bool) (*spec, error) {
	r := len(kernel)
	if r == 0 {
		return nil, fmt.Errorf("%s needs kernel_shape", op)
	}
	s := &spec{op: op, autoPad: autoPad, ceil: ceil}
	switch autoPad {
	case "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER":
	case "":
		s.autoPad = "NOTSET"
	default:
		return nil, fmt.Errorf("auto_pad %q is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", autoPad)
	}
	list := func(name string, v []int64, n int, def, lo int) ([]int, error) {
		if v == nil {
			out := make([]int, n)
			for i := range out {
				out[i] = def
			}
			return out, nil
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s has %d values, the %d-D kernel needs %d", name, len(v), r, n)
		}
		out := make([]int, n)
		for i, x := range v {
			if x < int64(lo) || x > maxPoolAttr {
				return nil, fmt.Errorf("%s %v: values must be in [%d, %d]", name, v, lo, maxPoolAttr)
			}
			out[i] = int(x)
		}
		return out, nil
	}
	var err error
	if s.kernel, err = list("kernel_shape", kernel, r, 1, 1); err != nil {
		return nil, err
	}
	if s.strides, err = list("strides", strides, r, 1, 1); err != nil {
		return nil, err
	}
	if s.dilations, err = list("dilations", dilations, r, 1, 1); err != nil {
		return nil, err
	}
	if s.pads, err = list("pads", pads, 2*r, 0, 0); err != nil {
		return nil, err
	}
	if s.autoPad != "NOTSET" && slices.ContainsFunc(s.pads, func(p int) bool { return p != 0 }) {
		return nil, fmt.Errorf("pads %v cannot be used with auto_pad %s", pads, s.autoPad)
	}
	return s, nil
}

// Geometry lays the windows of a pooling node over one input shape:
// an input [N, C, In...] pools to [N, C, Out...]. Along spatial axis i,
// window o reads the input positions o·Strides[i] − PadBegin[i] +
// k·Dilations[i] for k < Kernel[i] that lie in [0, In[i]); the others are
// padding.
type Geometry struct {
	N, C                       int
	In, Out                    []int
	Kernel, Strides, Dilations []int
	PadBegin, PadEnd           []int
}

// wholePlane reports whether g's one window covers each plane exactly:
// the kernel the input's size, undilated, unpadded.
func (g *Geometry) wholePlane() bool {
	for i, in := range g.In {
		if g.Out[i] != 1 || g.Kernel[i] != in || g.Dilations[i] != 1 || g.PadBegin[i] != 0 || g.PadEnd[i] != 0 {
			return false
		}
	}
	return true
}

func (s *spec) geometry(shape []int) (*Geometry, error) {
	r := len(s.kernel)
	if len(shape) != r+2 {
		return nil, ops.InputErrorf("%s with a %d-D kernel takes a rank-%d input (N, C and %d spatial dimensions), got shape %v", s.op, r, r+2, r, shape)
	}
	for _, d := range shape {
		if d > tensor.MaxElements { // possible beside a zero dimension
			return nil, ops.InputErrorf("%s input shape %v has a dimension over %d", s.op, shape, tensor.MaxElements)
		}
	}
	g := &Geometry{
		N: shape[0], C: shape[1], In: slices.Clone(shape[2:]), Out: make([]int, r),
		Kernel: s.kernel, Strides: s.strides, Dilations: s.dilations,
		PadBegin: make([]int, r), PadEnd: make([]int, r),
	}
	for i := 0; i < r; i++ {
		in, st := g.In[i], s.strides[i]
		ek := (s.kernel[i]-1)*s.dilations[i] + 1 // the window's extent
		var out, pb, pe int
		switch s.autoPad {
		case "VALID":
			if in < ek {
				return nil, ops.InputErrorf("%s: spatial dimension %d of input %v is smaller than the window's extent %d", s.op, i, shape, ek)
			}
			out = (in-ek)/st + 1
		case "SAME_UPPER", "SAME_LOWER":
			out = (in + st - 1) / st
			total := max(0, (out-1)*st+ek-in)
			pb = total / 2
			if s.autoPad == "SAME_LOWER" {
				pb = total - total/2
			}
			pe = total - pb
		default:
			pb, pe = s.pads[i], s.pads[i+r]
			span := in + pb + pe - ek
			if span < 0 {
				return nil, ops.InputErrorf("%s: spatial dimension %d of input %v, padded by %d and %d, is smaller than the window's extent %d", s.op, i, shape, pb, pe, ek)
			}
			out = span/st + 1
			if s.ceil {
				if span%st != 0 {
					out++
				}
				if (out-1)*st >= in+pb { // a last window would start in the end padding
					out--
				}
			}
		}
		g.Out[i], g.PadBegin[i], g.PadEnd[i] = out, pb, pe
	}
	if _, err := tensor.NumElements(g.OutShape()); err != nil {
		return nil, ops.InputErrorf("%s output %v: %v", s.op, g.OutShape(), err)
	}
	return g, nil
}

// OutShape returns the output's shape, [N, C, Out...].
func (g *Geometry) OutShape() []int { return append([]int{g.N, g.C}, g.Out...) }

// Planes returns N·C, the number of spatial planes.
func (g *Geometry) Planes() int { return g.N * g.C }

// InSize and OutSize return the number of elements of one input and one
// output plane.
func (g *Geometry) InSize() int  { return ops.ProdInts(g.In) }
func (g *Geometry) OutSize() int { return ops.ProdInts(g.Out) }

// poolSpan is the part of a window along one axis that lies inside the
// input: n positions from first, Dilations apart; padded counts the
// window's positions inside the padded input (a ceil_mode window can run
// past the end padding).
type poolSpan struct{ first, n, padded int }

// spans returns, for each output coordinate along axis i, its window's
// span inside the input.
func (g *Geometry) spans(i int) []poolSpan {
	in, k, st, d := g.In[i], g.Kernel[i], g.Strides[i], g.Dilations[i]
	out := make([]poolSpan, g.Out[i])
	for o := range out {
		start := o*st - g.PadBegin[i]
		lo := 0
		if start < 0 {
			lo = (-start + d - 1) / d
		}
		hi := 0
		if start < in {
			hi = min(k, (in-1-start)/d+1)
		}
		padded := min(k, (in+g.PadEnd[i]-1-start)/d+1)
		if hi > lo {
			out[o] = poolSpan{first: start + lo*d, n: hi - lo, padded: padded}
		} else {
			out[o] = poolSpan{padded: padded}
		}
	}
	return out
}

// Windows enumerates the input offsets (within one plane) of each
// output position's window, in row-major kernel order.
type Windows struct {
	tabs     [][]poolSpan
	inStride []int
	outDims  []int
	steps    []int // input offset between neighbouring taps, per axis
	counts   []int // scratch: the current window's taps per axis
	k        []int // scratch: odometer
	offs     []int
	area     int
}

// Area returns the number of positions of the window At last returned
// that lie inside the padded input.
func (w *Windows) Area() int { return w.area }

// Windows returns an enumerator of g's windows. For an empty output it
// enumerates nothing (and allocates nothing, however large the other
// dimensions).
func (g *Geometry) Windows() *Windows {
	r := len(g.In)
	w := &Windows{tabs: make([][]poolSpan, r), inStride: tensor.Strides(g.In), outDims: g.Out,
		steps: make([]int, r), counts: make([]int, r), k: make([]int, r)}
	if g.Planes() == 0 || g.OutSize() == 0 {
		return w
	}
	for i := range w.tabs {
		w.tabs[i] = g.spans(i)
		w.steps[i] = g.Dilations[i] * w.inStride[i]
	}
	return w
}

// fork returns an enumerator of the same windows with scratch of its
// own, for a chunk of a loop split across cores: At reuses its scratch,
// so one enumerator serves one goroutine.
func (w *Windows) fork() *Windows {
	r := len(w.tabs)
	return &Windows{tabs: w.tabs, inStride: w.inStride, outDims: w.outDims, steps: w.steps,
		counts: make([]int, r), k: make([]int, r)}
}

// kernelTaps returns the taps of a whole window, the most any window has.
func (g *Geometry) kernelTaps() int { return max(ops.ProdInts(g.Kernel), 1) }

// At returns the offsets of output position o's window (o an offset
// within one output plane), in row-major kernel order; the slice is
// reused by the next call. Area is then the number of the window's
// positions inside the padded input (what AveragePool with
// count_include_pad divides by).
func (w *Windows) At(o int) []int {
	r := len(w.tabs)
	w.offs = w.offs[:0]
	off, empty := 0, false
	w.area = 1
	for i := r - 1; i >= 0; i-- {
		sp := w.tabs[i][o%w.outDims[i]]
		o /= w.outDims[i]
		w.area *= sp.padded
		empty = empty || sp.n == 0
		w.counts[i], w.k[i] = sp.n, 0
		off += sp.first * w.inStride[i]
	}
	if empty {
		return w.offs
	}
	for { // odometer over the window's taps, last axis fastest
		w.offs = append(w.offs, off)
		i := r - 1
		for ; i >= 0; i-- {
			w.k[i]++
			off += w.steps[i]
			if w.k[i] < w.counts[i] {
				break
			}
			off -= w.steps[i] * w.counts[i]
			w.k[i] = 0
		}
		if i < 0 {
			return w.offs
		}
	}
}
