package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// MaxPool gained its Indices output and storage_order at 8, ceil_mode
	// and dilations at 10; later versions widened its types.
	register(Descriptor{Type: "MaxPool", Since: 1, Until: 7, Fold: true}, buildMaxPool)
	register(Descriptor{Type: "MaxPool", Since: 8, Until: 9, Fold: true}, buildMaxPool)
	register(Descriptor{Type: "MaxPool", Since: 10, Fold: true}, buildMaxPool)
	// AveragePool gained count_include_pad at 7, ceil_mode at 10 and
	// dilations at 19.
	register(Descriptor{Type: "AveragePool", Since: 1, Until: 6, Fold: true}, buildAveragePool)
	register(Descriptor{Type: "AveragePool", Since: 7, Until: 9, Fold: true}, buildAveragePool)
	register(Descriptor{Type: "AveragePool", Since: 10, Until: 18, Fold: true}, buildAveragePool)
	register(Descriptor{Type: "AveragePool", Since: 19, Fold: true}, buildAveragePool)
	// LpPool's p is an INT from 2 (a FLOAT in 1, before MinOpset); it
	// gained ceil_mode and dilations at 18.
	register(Descriptor{Type: "LpPool", Since: 2, Until: 17, Fold: true}, buildLpPool)
	register(Descriptor{Type: "LpPool", Since: 18, Fold: true}, buildLpPool)
	register(Descriptor{Type: "GlobalAveragePool", Since: 1, Fold: true}, buildGlobalPool("GlobalAveragePool"))
	register(Descriptor{Type: "GlobalMaxPool", Since: 1, Fold: true}, buildGlobalPool("GlobalMaxPool"))
	register(Descriptor{Type: "GlobalLpPool", Since: 2, Fold: true}, buildGlobalLpPool)
	register(Descriptor{Type: "MaxUnpool", Since: 9, Fold: true}, buildMaxUnpool)
	register(Descriptor{Type: "MaxRoiPool", Since: 1, Fold: true}, buildMaxRoiPool)
	// RoiAlign gained coordinate_transformation_mode at 16; before it,
	// coordinates behave as its "output_half_pixel".
	register(Descriptor{Type: "RoiAlign", Since: 10, Until: 15, Fold: true}, buildRoiAlign10)
	register(Descriptor{Type: "RoiAlign", Since: 16, Fold: true}, buildRoiAlign)
}

// MaxPoolAttrs are MaxPool's attributes.
type MaxPoolAttrs struct {
	AutoPad      string  `onnx:"auto_pad" default:"NOTSET"`
	KernelShape  []int64 `onnx:"kernel_shape"`
	Pads         []int64 `onnx:"pads"`
	Strides      []int64 `onnx:"strides"`
	Dilations    []int64 `onnx:"dilations"`
	CeilMode     bool    `onnx:"ceil_mode"`
	StorageOrder int64   `onnx:"storage_order"`

	spec *poolSpec // validated at load
}

// AveragePoolAttrs are AveragePool's attributes.
type AveragePoolAttrs struct {
	AutoPad         string  `onnx:"auto_pad" default:"NOTSET"`
	KernelShape     []int64 `onnx:"kernel_shape"`
	Pads            []int64 `onnx:"pads"`
	Strides         []int64 `onnx:"strides"`
	Dilations       []int64 `onnx:"dilations"`
	CeilMode        bool    `onnx:"ceil_mode"`
	CountIncludePad bool    `onnx:"count_include_pad"`

	spec *poolSpec
}

// LpPoolAttrs are LpPool's attributes.
type LpPoolAttrs struct {
	AutoPad     string  `onnx:"auto_pad" default:"NOTSET"`
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
	Dilations   []int64 `onnx:"dilations"`
	CeilMode    bool    `onnx:"ceil_mode"`
	P           int64   `onnx:"p" default:"2"`

	spec *poolSpec
}

// GlobalLpPoolAttrs are GlobalLpPool's attributes.
type GlobalLpPoolAttrs struct {
	P int64 `onnx:"p" default:"2"`
}

// MaxUnpoolAttrs are MaxUnpool's attributes.
type MaxUnpoolAttrs struct {
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`
}

// MaxRoiPoolAttrs are MaxRoiPool's attributes.
type MaxRoiPoolAttrs struct {
	PooledShape  []int64 `onnx:"pooled_shape"`
	SpatialScale float32 `onnx:"spatial_scale" default:"1"`
}

// RoiAlignAttrs are RoiAlign's attributes from opset 16.
type RoiAlignAttrs struct {
	CoordinateTransformationMode string  `onnx:"coordinate_transformation_mode" default:"half_pixel"`
	Mode                         string  `onnx:"mode" default:"avg"`
	OutputHeight                 int64   `onnx:"output_height" default:"1"`
	OutputWidth                  int64   `onnx:"output_width" default:"1"`
	SamplingRatio                int64   `onnx:"sampling_ratio"`
	SpatialScale                 float32 `onnx:"spatial_scale" default:"1"`
}

// RoiAlign10Attrs are RoiAlign's attributes in opsets 10 to 15.
type RoiAlign10Attrs struct {
	Mode          string  `onnx:"mode" default:"avg"`
	OutputHeight  int64   `onnx:"output_height" default:"1"`
	OutputWidth   int64   `onnx:"output_width" default:"1"`
	SamplingRatio int64   `onnx:"sampling_ratio"`
	SpatialScale  float32 `onnx:"spatial_scale" default:"1"`
}

// maxPoolAttr is the largest kernel, stride, dilation or pad accepted:
// every product of two of them fits an int.
const maxPoolAttr = tensor.MaxElements

// poolSpec is a pooling node's validated window attributes.
type poolSpec struct {
	op                         string
	autoPad                    string
	kernel, strides, dilations []int
	pads                       []int // begins then ends
	ceil                       bool
}

func newPoolSpec(op, autoPad string, kernel, pads, strides, dilations []int64, ceil bool) (*poolSpec, error) {
	r := len(kernel)
	if r == 0 {
		return nil, fmt.Errorf("%s needs kernel_shape", op)
	}
	s := &poolSpec{op: op, autoPad: autoPad, ceil: ceil}
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

// PoolGeometry lays the windows of a pooling node over one input shape:
// an input [N, C, In...] pools to [N, C, Out...]. Along spatial axis i,
// window o reads the input positions o·Strides[i] − PadBegin[i] +
// k·Dilations[i] for k < Kernel[i] that lie in [0, In[i]); the others are
// padding.
type PoolGeometry struct {
	N, C                       int
	In, Out                    []int
	Kernel, Strides, Dilations []int
	PadBegin, PadEnd           []int
}

func (s *poolSpec) geometry(shape []int) (*PoolGeometry, error) {
	r := len(s.kernel)
	if len(shape) != r+2 {
		return nil, inputErrorf("%s with a %d-D kernel takes a rank-%d input (N, C and %d spatial dimensions), got shape %v", s.op, r, r+2, r, shape)
	}
	for _, d := range shape {
		if d > tensor.MaxElements { // possible beside a zero dimension
			return nil, inputErrorf("%s input shape %v has a dimension over %d", s.op, shape, tensor.MaxElements)
		}
	}
	g := &PoolGeometry{
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
				return nil, inputErrorf("%s: spatial dimension %d of input %v is smaller than the window's extent %d", s.op, i, shape, ek)
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
				return nil, inputErrorf("%s: spatial dimension %d of input %v, padded by %d and %d, is smaller than the window's extent %d", s.op, i, shape, pb, pe, ek)
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
		return nil, inputErrorf("%s output %v: %v", s.op, g.OutShape(), err)
	}
	return g, nil
}

// OutShape returns the output's shape, [N, C, Out...].
func (g *PoolGeometry) OutShape() []int { return append([]int{g.N, g.C}, g.Out...) }

// Planes returns N·C, the number of spatial planes.
func (g *PoolGeometry) Planes() int { return g.N * g.C }

// InSize and OutSize return the number of elements of one input and one
// output plane.
func (g *PoolGeometry) InSize() int  { return prodInts(g.In) }
func (g *PoolGeometry) OutSize() int { return prodInts(g.Out) }

// poolSpan is the part of a window along one axis that lies inside the
// input: n positions from first, Dilations apart; padded counts the
// window's positions inside the padded input (a ceil_mode window can run
// past the end padding).
type poolSpan struct{ first, n, padded int }

// spans returns, for each output coordinate along axis i, its window's
// span inside the input.
func (g *PoolGeometry) spans(i int) []poolSpan {
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

// PoolWindows enumerates the input offsets (within one plane) of each
// output position's window, in row-major kernel order.
type PoolWindows struct {
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
func (w *PoolWindows) Area() int { return w.area }

// Windows returns an enumerator of g's windows. For an empty output it
// enumerates nothing (and allocates nothing, however large the other
// dimensions).
func (g *PoolGeometry) Windows() *PoolWindows {
	r := len(g.In)
	w := &PoolWindows{tabs: make([][]poolSpan, r), inStride: tensor.Strides(g.In), outDims: g.Out,
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

// At returns the offsets of output position o's window (o an offset
// within one output plane), in row-major kernel order; the slice is
// reused by the next call. Area is then the number of the window's
// positions inside the padded input (what AveragePool with
// count_include_pad divides by).
func (w *PoolWindows) At(o int) []int {
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

// Geometry returns how the node's windows lie over an input of the given
// shape.
func (a *MaxPoolAttrs) Geometry(shape []int) (*PoolGeometry, error) {
	if a.spec == nil {
		return nil, fmt.Errorf("MaxPool attributes were not validated")
	}
	return a.spec.geometry(shape)
}

// Geometry returns how the node's windows lie over an input of the given
// shape.
func (a *AveragePoolAttrs) Geometry(shape []int) (*PoolGeometry, error) {
	if a.spec == nil {
		return nil, fmt.Errorf("AveragePool attributes were not validated")
	}
	return a.spec.geometry(shape)
}

// lowest returns the identity of max over T: -Inf for floats, the
// smallest value for integers.
func lowest[T tensor.Numeric]() T {
	var z T
	switch any(z).(type) {
	case float32, float64:
		inf := math.Inf(-1)
		return T(inf)
	case int8:
		v := int8(math.MinInt8)
		return T(v)
	case int16:
		v := int16(math.MinInt16)
		return T(v)
	case int32:
		v := int32(math.MinInt32)
		return T(v)
	case int64:
		v := int64(math.MinInt64)
		return T(v)
	}
	return 0
}

func buildMaxPool(n *node, at *MaxPoolAttrs) (opFunc, error) {
	maxOut := 2
	if n.opset < 8 {
		maxOut = 1
	}
	if err := n.checkArity(1, 1, 1, maxOut); err != nil {
		return nil, err
	}
	if err := checkAttrOpsets(n, opsetAttr{"storage_order", 8, 0}, opsetAttr{"ceil_mode", 10, 0}, opsetAttr{"dilations", 10, 0}); err != nil {
		return nil, err
	}
	spec, err := newPoolSpec("MaxPool", at.AutoPad, at.KernelShape, at.Pads, at.Strides, at.Dilations, at.CeilMode)
	if err != nil {
		return nil, err
	}
	if at.StorageOrder != 0 && at.StorageOrder != 1 {
		return nil, fmt.Errorf("storage_order %d is not 0 (row major) or 1 (column major)", at.StorageOrder)
	}
	at.spec = spec
	wantIdx := len(n.pb.Outputs) > 1 && n.pb.Outputs[1] != ""
	colMajor := at.StorageOrder == 1
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		g, err := spec.geometry(x.Shape)
		if err != nil {
			return nil, err
		}
		var y any
		var idx []int64
		switch d := x.Data.(type) {
		case []float32:
			y, idx = maxPool(d, g, wantIdx)
		case []float64:
			y, idx = maxPool(d, g, wantIdx)
		case []int8:
			y, idx = maxPool(d, g, wantIdx)
		case []uint8:
			y, idx = maxPool(d, g, wantIdx)
		case []tensor.F16, []tensor.BF16:
			f, _ := widenHalf(x)
			var yf []float32
			yf, idx = maxPool(f, g, wantIdx)
			y = narrowHalf(x.DType, yf)
		default:
			return nil, inputErrorf("MaxPool does not take %v", x.DType)
		}
		out := []*tensor.Tensor{{DType: x.DType, Shape: g.OutShape(), Data: y}}
		if wantIdx {
			if colMajor {
				poolColumnMajor(idx, g)
			}
			out = append(out, tensor.From(g.OutShape(), idx))
		}
		return out, nil
	}, nil
}

// maxPool returns the maximum of each window (NaN if it holds one, as
// math.Max; -Inf, or the type's smallest value, for a window over padding
// only), and with wantIdx the flat row-major input index of the first
// element equal to it (-1 for an empty window). 2-D float32 pooling
// without indices runs pool2D.
func maxPool[T tensor.Numeric](x []T, g *PoolGeometry, wantIdx bool) ([]T, []int64) {
	y := make([]T, g.Planes()*g.OutSize())
	if xf, ok := any(x).([]float32); ok && len(g.In) == 2 && !wantIdx {
		pool2D(xf, any(y).([]float32), g, poolMax)
		return y, nil
	}
	var idx []int64
	if wantIdx {
		idx = make([]int64, len(y))
	}
	maxPoolND(x, y, idx, g)
	return y, idx
}

// maxPoolND is the reference every pooling path is tested against: any
// rank, any type, window by window.
func maxPoolND[T tensor.Numeric](x, y []T, idx []int64, g *PoolGeometry) {
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	low := lowest[T]()
	for p := 0; p < g.Planes(); p++ {
		xp := x[p*is : (p+1)*is]
		for o := 0; o < os; o++ {
			offs := w.At(o)
			m := low
			for _, off := range offs {
				m = max(m, xp[off])
			}
			y[p*os+o] = m
			if idx == nil {
				continue
			}
			best := int64(-1)
			for _, off := range offs {
				if v := xp[off]; v == m || v != v && m != m {
					best = int64(p*is + off)
					break
				}
			}
			idx[p*os+o] = best
		}
	}
}

// poolKind selects what pool2D computes.
type poolKind int

const (
	poolMax        poolKind = iota
	poolAvg                 // mean over the input elements a window covers
	poolAvgPadding          // mean counting padding as zeros
)

// pool2D is max and average pooling of 2-D float32 planes, separably: for
// each output row it folds the input rows its windows cross into one
// scratch row (max or sum, column by column), then folds each window's
// columns of that row. A 3×3 window costs 2 operations per input column
// and 2 per output instead of 9 per output. Max gives the bits
// maxPoolND gives (the builtin max is exact in any order); sums add in
// another order than avgPoolND, so they agree within rounding.
func pool2D(x, y []float32, g *PoolGeometry, kind poolKind) {
	if len(y) == 0 {
		return
	}
	H, W, OH, OW := g.In[0], g.In[1], g.Out[0], g.Out[1]
	dh, dw, kw, sw := g.Dilations[0], g.Dilations[1], g.Kernel[1], g.Strides[1]
	rows, cols := g.spans(0), g.spans(1)
	interior := poolInterior(cols, kw)
	tmp := make([]float32, W)
	negInf := float32(math.Inf(-1))
	for p := 0; p < g.Planes(); p++ {
		xp := x[p*H*W : (p+1)*H*W]
		yp := y[p*OH*OW : (p+1)*OH*OW]
		for oh, rs := range rows {
			yr := yp[oh*OW : (oh+1)*OW]
			if rs.n == 0 { // every window of the row lies in padding
				for ow, cs := range cols {
					switch kind {
					case poolMax:
						yr[ow] = negInf
					case poolAvg:
						yr[ow] = float32(math.NaN())
					case poolAvgPadding:
						yr[ow] = 0 / float32(rs.padded*cs.padded)
					}
				}
				continue
			}
			row := func(r int) []float32 {
				ih := rs.first + r*dh
				return xp[ih*W : (ih+1)*W]
			}
			foldRows(tmp, rs.n, row, kind == poolMax)
			switch kind {
			case poolMax:
				maxCols(tmp, yr, cols, interior, kw, sw, dw)
			default:
				sumCols(tmp, yr, cols, interior, kw, sw, dw)
				if kind == poolAvg {
					for ow, cs := range cols {
						yr[ow] /= float32(rs.n * cs.n)
					}
				} else {
					for ow, cs := range cols {
						yr[ow] /= float32(rs.padded * cs.padded)
					}
				}
			}
		}
	}
}

// foldRows sets tmp to the columnwise max (or sum) of rows row(0) to
// row(n-1), n >= 1, in one pass for the common two and three rows.
func foldRows(tmp []float32, n int, row func(r int) []float32, isMax bool) {
	r0 := row(0)[:len(tmp)]
	start := 1
	switch {
	case n == 1:
		copy(tmp, r0)
		return
	case n >= 3:
		r1, r2 := row(1)[:len(tmp)], row(2)[:len(tmp)]
		if isMax {
			for i := range tmp {
				tmp[i] = max(r0[i], r1[i], r2[i])
			}
		} else {
			for i := range tmp {
				tmp[i] = r0[i] + r1[i] + r2[i]
			}
		}
		start = 3
	default:
		r1 := row(1)[:len(tmp)]
		if isMax {
			for i := range tmp {
				tmp[i] = max(r0[i], r1[i])
			}
		} else {
			for i := range tmp {
				tmp[i] = r0[i] + r1[i]
			}
		}
		start = 2
	}
	for r := start; r < n; r++ {
		xr := row(r)[:len(tmp)]
		if isMax {
			for i, v := range xr {
				tmp[i] = max(tmp[i], v)
			}
		} else {
			for i, v := range xr {
				tmp[i] += v
			}
		}
	}
}

// poolInterior returns the range [lo, hi) of output columns whose windows
// lie wholly inside the input.
func poolInterior(cols []poolSpan, k int) [2]int {
	lo, hi := 0, 0
	for lo < len(cols) && cols[lo].n != k {
		lo++
	}
	hi = lo
	for hi < len(cols) && cols[hi].n == k {
		hi++
	}
	return [2]int{lo, hi}
}

// maxCols sets yr[ow] to the maximum of row over window ow's columns (-Inf
// for a window over padding only).
func maxCols(row, yr []float32, cols []poolSpan, interior [2]int, k, sw, dw int) {
	edge := func(ow int) {
		cs := cols[ow]
		m := float32(math.Inf(-1))
		for c, j := cs.first, 0; j < cs.n; c, j = c+dw, j+1 {
			m = max(m, row[c])
		}
		yr[ow] = m
	}
	lo, hi := interior[0], interior[1]
	for ow := 0; ow < lo; ow++ {
		edge(ow)
	}
	if lo < hi {
		c := cols[lo].first
		switch {
		case k == 3 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+2]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = max(row[c], row[c+1], row[c+2])
			}
		case k == 2 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+1]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = max(row[c], row[c+1])
			}
		default:
			for ow := lo; ow < hi; ow++ {
				edge(ow)
			}
		}
	}
	for ow := hi; ow < len(cols); ow++ {
		edge(ow)
	}
}

// sumCols sets yr[ow] to the sum of row over window ow's columns.
func sumCols(row, yr []float32, cols []poolSpan, interior [2]int, k, sw, dw int) {
	edge := func(ow int) {
		cs := cols[ow]
		var s float32
		for c, j := cs.first, 0; j < cs.n; c, j = c+dw, j+1 {
			s += row[c]
		}
		yr[ow] = s
	}
	lo, hi := interior[0], interior[1]
	for ow := 0; ow < lo; ow++ {
		edge(ow)
	}
	if lo < hi {
		c := cols[lo].first
		switch {
		case k == 3 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+2]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = row[c] + row[c+1] + row[c+2]
			}
		case k == 2 && dw == 1:
			_ = row[c+(hi-lo-1)*sw+1]
			for ow := lo; ow < hi; ow, c = ow+1, c+sw {
				yr[ow] = row[c] + row[c+1]
			}
		default:
			for ow := lo; ow < hi; ow++ {
				edge(ow)
			}
		}
	}
	for ow := hi; ow < len(cols); ow++ {
		edge(ow)
	}
}

// poolColumnMajor rewrites row-major plane offsets in idx (flat input
// indices) as column-major ones: storage_order 1.
func poolColumnMajor(idx []int64, g *PoolGeometry) {
	is := int64(g.InSize())
	r := len(g.In)
	coords := make([]int64, r)
	for i, v := range idx {
		if v < 0 {
			continue
		}
		plane, off := v/is, v%is
		col, stride := int64(0), int64(1)
		for a := r - 1; a >= 0; a-- {
			coords[a] = off % int64(g.In[a])
			off /= int64(g.In[a])
		}
		for a := 0; a < r; a++ {
			col += coords[a] * stride
			stride *= int64(g.In[a])
		}
		idx[i] = plane*is + col
	}
}

func buildAveragePool(n *node, at *AveragePoolAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrOpsets(n, opsetAttr{"count_include_pad", 7, 0}, opsetAttr{"ceil_mode", 10, 0}, opsetAttr{"dilations", 19, 0}); err != nil {
		return nil, err
	}
	spec, err := newPoolSpec("AveragePool", at.AutoPad, at.KernelShape, at.Pads, at.Strides, at.Dilations, at.CeilMode)
	if err != nil {
		return nil, err
	}
	at.spec = spec
	include := at.CountIncludePad
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		g, err := spec.geometry(x.Shape)
		if err != nil {
			return nil, err
		}
		var y any
		switch d := x.Data.(type) {
		case []float32:
			y = avgPool(d, g, include)
		case []float64:
			y = avgPool(d, g, include)
		case []tensor.F16, []tensor.BF16:
			f, _ := widenHalf(x)
			y = narrowHalf(x.DType, avgPool(f, g, include))
		default:
			return nil, inputErrorf("AveragePool does not take %v", x.DType)
		}
		return &tensor.Tensor{DType: x.DType, Shape: g.OutShape(), Data: y}, nil
	}), nil
}

// avgPool returns the mean of each window: its sum over the input
// elements it covers, divided by their count, or with include by the
// number of its positions inside the padded input (padding counts as
// zeros; positions past the end padding, which only ceil_mode makes, do
// not count). 2-D float32 runs pool2D.
func avgPool[T tensor.Float](x []T, g *PoolGeometry, include bool) []T {
	y := make([]T, g.Planes()*g.OutSize())
	if xf, ok := any(x).([]float32); ok && len(g.In) == 2 {
		kind := poolAvg
		if include {
			kind = poolAvgPadding
		}
		pool2D(xf, any(y).([]float32), g, kind)
		return y
	}
	avgPoolND(x, y, g, include)
	return y
}

// avgPoolND is the reference for average pooling: any rank, window by
// window, summing in row-major kernel order.
func avgPoolND[T tensor.Float](x, y []T, g *PoolGeometry, include bool) {
	w := g.Windows()
	is, os := g.InSize(), g.OutSize()
	for p := 0; p < g.Planes(); p++ {
		xp := x[p*is : (p+1)*is]
		for o := 0; o < os; o++ {
			var s T
			offs := w.At(o)
			for _, off := range offs {
				s += xp[off]
			}
			if include {
				y[p*os+o] = s / T(w.area)
			} else {
				y[p*os+o] = s / T(len(offs))
			}
		}
	}
}

func buildLpPool(n *node, at *LpPoolAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrOpsets(n, opsetAttr{"ceil_mode", 18, 0}, opsetAttr{"dilations", 18, 0}); err != nil {
		return nil, err
	}
	spec, err := newPoolSpec("LpPool", at.AutoPad, at.KernelShape, at.Pads, at.Strides, at.Dilations, at.CeilMode)
	if err != nil {
		return nil, err
	}
	if at.P < 1 {
		return nil, fmt.Errorf("LpPool p = %d, must be at least 1", at.P)
	}
	at.spec = spec
	p := float64(at.P)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		g, err := spec.geometry(x.Shape)
		if err != nil {
			return nil, err
		}
		w := g.Windows()
		is, os := g.InSize(), g.OutSize()
		return poolFloats("LpPool", x, g.OutShape(), func(xs []float64, y []float64) {
			for pl := 0; pl < g.Planes(); pl++ {
				xp := xs[pl*is : (pl+1)*is]
				for o := 0; o < os; o++ {
					var s float64
					for _, off := range w.At(o) {
						s += lpPow(xp[off], p)
					}
					y[pl*os+o] = lpRoot(s, p)
				}
			}
		})
	}), nil
}

func lpPow(v, p float64) float64 {
	switch p {
	case 1:
		return math.Abs(v)
	case 2:
		return v * v
	}
	return math.Pow(math.Abs(v), p)
}

func lpRoot(s, p float64) float64 {
	switch p {
	case 1:
		return s
	case 2:
		return math.Sqrt(s)
	}
	return math.Pow(s, 1/p)
}

// poolFloats runs f over x's elements in float64 and returns its output
// (of shape out) in x's floating-point type, rounded once.
func poolFloats(op string, x *tensor.Tensor, out []int, f func(x, y []float64)) (*tensor.Tensor, error) {
	switch x.DType {
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
	default:
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, inputErrorf("%s output %v: %v", op, out, err)
	}
	y := make([]float64, n)
	f(x.Float64s(), y)
	return fromFloat64s(x.DType, out, y), nil
}

// globalPoolShape checks x is [N, C, D...] with non-empty spatial
// dimensions and returns N·C, the spatial size and the output shape
// [N, C, 1...].
func globalPoolShape(op string, x *tensor.Tensor) (planes, size int, out []int, err error) {
	if x.Rank() < 2 {
		return 0, 0, nil, inputErrorf("%s takes an input of rank 2 or more (N, C, spatial...), got shape %v", op, x.Shape)
	}
	size = prodInts(x.Shape[2:])
	if size == 0 && x.Shape[0]*x.Shape[1] != 0 {
		return 0, 0, nil, inputErrorf("%s over empty spatial dimensions (shape %v)", op, x.Shape)
	}
	out = make([]int, x.Rank())
	for i := range out {
		out[i] = 1
	}
	out[0], out[1] = x.Shape[0], x.Shape[1]
	return x.Shape[0] * x.Shape[1], size, out, nil
}

func buildGlobalPool(op string) func(n *node, _ *noAttrs) (opFunc, error) {
	return func(n *node, _ *noAttrs) (opFunc, error) {
		if err := n.checkArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		sum32 := n.opts.Exec.Table().PoolSum
		return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
			planes, size, out, err := globalPoolShape(op, x)
			if err != nil {
				return nil, err
			}
			var y any
			avg := op == "GlobalAveragePool"
			switch d := x.Data.(type) {
			case []float32:
				y = globalPool(d, planes, size, avg, sum32)
			case []float64:
				y = globalPool(d, planes, size, avg, sum32)
			case []tensor.F16, []tensor.BF16:
				f, _ := widenHalf(x)
				y = narrowHalf(x.DType, globalPool(f, planes, size, avg, sum32))
			default:
				return nil, inputErrorf("%s does not take %v", op, x.DType)
			}
			return &tensor.Tensor{DType: x.DType, Shape: out, Data: y}, nil
		}), nil
	}
}

// globalPool returns each plane's mean (avg) or maximum (NaN if it holds
// one).
// Means add in float64, four lanes at a time.
func globalPool[T tensor.Float](x []T, planes, size int, avg bool, sum32 func([]float32) float64) []T {
	y := make([]T, planes)
	for p := range y {
		row := x[p*size : (p+1)*size]
		if r32, ok := any(row).([]float32); ok && avg {
			y[p] = T(sum32(r32) / float64(size))
			continue
		}
		if avg {
			var s0, s1, s2, s3 float64
			i := 0
			for ; i+4 <= len(row); i += 4 {
				s0 += float64(row[i])
				s1 += float64(row[i+1])
				s2 += float64(row[i+2])
				s3 += float64(row[i+3])
			}
			for ; i < len(row); i++ {
				s0 += float64(row[i])
			}
			y[p] = T((s0 + s1 + s2 + s3) / float64(size))
			continue
		}
		m := T(math.Inf(-1))
		for _, v := range row {
			m = max(m, v)
		}
		y[p] = m
	}
	return y
}

func buildGlobalLpPool(n *node, at *GlobalLpPoolAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.P < 1 {
		return nil, fmt.Errorf("GlobalLpPool p = %d, must be at least 1", at.P)
	}
	p := float64(at.P)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		planes, size, out, err := globalPoolShape("GlobalLpPool", x)
		if err != nil {
			return nil, err
		}
		return poolFloats("GlobalLpPool", x, out, func(xs, y []float64) {
			for pl := 0; pl < planes; pl++ {
				var s float64
				for _, v := range xs[pl*size : (pl+1)*size] {
					s += lpPow(v, p)
				}
				y[pl] = lpRoot(s, p)
			}
		})
	}), nil
}

func buildMaxUnpool(n *node, at *MaxUnpoolAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	spec, err := newPoolSpec("MaxUnpool", "NOTSET", at.KernelShape, at.Pads, at.Strides, nil, false)
	if err != nil {
		return nil, err
	}
	r := len(spec.kernel)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, ind := in[0], in[1]
		if x.Rank() != r+2 {
			return nil, inputErrorf("MaxUnpool with a %d-D kernel takes a rank-%d input, got shape %v", r, r+2, x.Shape)
		}
		if slices.ContainsFunc(x.Shape, func(d int) bool { return d > tensor.MaxElements }) {
			return nil, inputErrorf("MaxUnpool input shape %v has a dimension over %d", x.Shape, tensor.MaxElements)
		}
		if !equalShape(ind.Shape, x.Shape) {
			return nil, inputErrorf("MaxUnpool indices have shape %v, the input %v", ind.Shape, x.Shape)
		}
		iv, ok := ind.Data.([]int64)
		if !ok {
			return nil, inputErrorf("MaxUnpool indices must be INT64, got %v", ind.DType)
		}
		// The unpooled shape: the input MaxPool read, as its windows tell.
		inferred := slices.Clone(x.Shape)
		for i := 0; i < r; i++ {
			if x.Shape[i+2] == 0 {
				inferred[i+2] = 0
				continue
			}
			inferred[i+2] = (x.Shape[i+2]-1)*spec.strides[i] - spec.pads[i] - spec.pads[i+r] + spec.kernel[i]
			if inferred[i+2] < 1 {
				return nil, inputErrorf("MaxUnpool of input %v: pads leave spatial dimension %d empty", x.Shape, i)
			}
		}
		out := inferred
		if len(in) > 2 && in[2] != nil {
			os, err := in[2].Int64s()
			if err != nil || in[2].Rank() != 1 || len(os) != x.Rank() {
				return nil, inputErrorf("MaxUnpool output_shape must be a 1-D integer tensor of %d values, got %v %v", x.Rank(), in[2].DType, in[2].Shape)
			}
			out = make([]int, len(os))
			for i, d := range os {
				if d < int64(inferred[i]) || d > tensor.MaxElements || i < 2 && d != int64(inferred[i]) {
					return nil, inputErrorf("MaxUnpool output_shape %v cannot hold the unpooled shape %v", os, inferred)
				}
				out[i] = int(d)
			}
		}
		total, err := tensor.NumElements(inferred)
		if err != nil {
			return nil, inputErrorf("MaxUnpool output %v: %v", inferred, err)
		}
		if _, err := tensor.NumElements(out); err != nil {
			return nil, inputErrorf("MaxUnpool output %v: %v", out, err)
		}
		for _, v := range iv {
			if v < 0 || v >= int64(total) {
				return nil, inputErrorf("MaxUnpool index %d is outside the unpooled shape %v", v, inferred)
			}
		}
		var data any
		switch d := x.Data.(type) {
		case []float32:
			data = unpool(d, iv, inferred, out)
		case []float64:
			data = unpool(d, iv, inferred, out)
		case []tensor.F16:
			data = unpool(d, iv, inferred, out)
		case []tensor.BF16:
			data = unpool(d, iv, inferred, out)
		default:
			return nil, inputErrorf("MaxUnpool does not take %v", x.DType)
		}
		return []*tensor.Tensor{{DType: x.DType, Shape: out, Data: data}}, nil
	}, nil
}

// unpool scatters x to the flat positions idx of a zero tensor of shape
// inferred, then places that tensor at the origin of one of shape out.
func unpool[T tensor.Elem](x []T, idx []int64, inferred, out []int) []T {
	y := make([]T, prodInts(out))
	st := tensor.Strides(out)
	for i, v := range x {
		off, rest := 0, int(idx[i])
		for a := len(inferred) - 1; a >= 0; a-- {
			off += rest % inferred[a] * st[a]
			rest /= inferred[a]
		}
		y[off] = v
	}
	return y
}

func buildMaxRoiPool(n *node, at *MaxRoiPoolAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	if len(at.PooledShape) != 2 || at.PooledShape[0] < 1 || at.PooledShape[1] < 1 || at.PooledShape[0] > maxPoolAttr || at.PooledShape[1] > maxPoolAttr {
		return nil, fmt.Errorf("MaxRoiPool pooled_shape %v must be two positive sizes", at.PooledShape)
	}
	ph, pw := int(at.PooledShape[0]), int(at.PooledShape[1])
	scale := float64(at.SpatialScale)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, rois := in[0], in[1]
		if x.Rank() != 4 {
			return nil, inputErrorf("MaxRoiPool takes a 4-D input (N, C, H, W), got shape %v", x.Shape)
		}
		if rois.Rank() != 2 || rois.Shape[1] != 5 || rois.DType != x.DType {
			return nil, inputErrorf("MaxRoiPool rois must be [num_rois, 5] of the input's type %v, got %v %v", x.DType, rois.DType, rois.Shape)
		}
		N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		R := rois.Shape[0]
		out := []int{R, C, ph, pw}
		rv := rois.Float64s()
		for i := 0; i < R; i++ {
			for _, v := range rv[i*5 : i*5+5] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, inputErrorf("MaxRoiPool roi %d is not finite: %v", i, rv[i*5:i*5+5])
				}
			}
			if b := rv[i*5]; b < 0 || b >= float64(N) {
				return nil, inputErrorf("MaxRoiPool roi %d names batch %v, the input has %d", i, b, N)
			}
		}
		return unaryResult(poolFloats("MaxRoiPool", x, out, func(xs, y []float64) {
			clampRound := func(v float64) int { // C's round, half away from zero, clamped
				return int(math.Max(-1<<40, math.Min(1<<40, math.Round(v*scale))))
			}
			for i := 0; i < R; i++ {
				roi := rv[i*5 : i*5+5]
				b := int(roi[0])
				x1, y1, x2, y2 := clampRound(roi[1]), clampRound(roi[2]), clampRound(roi[3]), clampRound(roi[4])
				bh := float64(max(y2-y1+1, 1)) / float64(ph)
				bw := float64(max(x2-x1+1, 1)) / float64(pw)
				for c := 0; c < C; c++ {
					plane := xs[(b*C+c)*H*W : (b*C+c+1)*H*W]
					yo := y[(i*C+c)*ph*pw : (i*C+c+1)*ph*pw]
					for oh := 0; oh < ph; oh++ {
						hs := min(max(int(math.Floor(float64(oh)*bh))+y1, 0), H)
						he := min(max(int(math.Ceil(float64(oh+1)*bh))+y1, 0), H)
						for ow := 0; ow < pw; ow++ {
							ws := min(max(int(math.Floor(float64(ow)*bw))+x1, 0), W)
							we := min(max(int(math.Ceil(float64(ow+1)*bw))+x1, 0), W)
							if he <= hs || we <= ws {
								yo[oh*pw+ow] = 0
								continue
							}
							m := math.Inf(-1)
							for h := hs; h < he; h++ {
								for _, v := range plane[h*W+ws : h*W+we] {
									if v > m {
										m = v
									}
								}
							}
							yo[oh*pw+ow] = m
						}
					}
				}
			}
		}))
	}, nil
}

// roiAlignMaxSamples bounds the bilinear samples one RoiAlign call takes
// (rois × channels × bins × samples per bin): an adaptive sampling grid
// follows the ROI's size, which the request chooses.
const roiAlignMaxSamples = 1 << 31

type roiAlignSpec struct {
	max        bool
	halfPixel  bool
	oh, ow     int
	sampling   int
	scale      float64
	maxSamples int
}

func buildRoiAlign(n *node, at *RoiAlignAttrs) (opFunc, error) {
	var half bool
	switch at.CoordinateTransformationMode {
	case "half_pixel":
		half = true
	case "output_half_pixel":
	default:
		return nil, fmt.Errorf("RoiAlign coordinate_transformation_mode %q is not half_pixel or output_half_pixel", at.CoordinateTransformationMode)
	}
	return roiAlignBuilder(n, at.Mode, at.OutputHeight, at.OutputWidth, at.SamplingRatio, at.SpatialScale, half)
}

func buildRoiAlign10(n *node, at *RoiAlign10Attrs) (opFunc, error) {
	return roiAlignBuilder(n, at.Mode, at.OutputHeight, at.OutputWidth, at.SamplingRatio, at.SpatialScale, false)
}

func roiAlignBuilder(n *node, mode string, oh, ow, sampling int64, scale float32, half bool) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	s := roiAlignSpec{halfPixel: half, scale: float64(scale), maxSamples: roiAlignMaxSamples}
	switch mode {
	case "avg":
	case "max":
		s.max = true
	default:
		return nil, fmt.Errorf("RoiAlign mode %q is not avg or max", mode)
	}
	if oh < 1 || ow < 1 || oh > maxPoolAttr || ow > maxPoolAttr {
		return nil, fmt.Errorf("RoiAlign output_height %d and output_width %d must be positive", oh, ow)
	}
	if sampling < 0 || sampling > maxPoolAttr {
		return nil, fmt.Errorf("RoiAlign sampling_ratio %d must be 0 (adaptive) or positive", sampling)
	}
	s.oh, s.ow, s.sampling = int(oh), int(ow), int(sampling)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return unaryResult(s.run(in[0], in[1], in[2]))
	}, nil
}

func (s *roiAlignSpec) run(x, rois, batch *tensor.Tensor) (*tensor.Tensor, error) {
	if x.Rank() != 4 {
		return nil, inputErrorf("RoiAlign takes a 4-D input (N, C, H, W), got shape %v", x.Shape)
	}
	if rois.Rank() != 2 || rois.Shape[1] != 4 || rois.DType != x.DType {
		return nil, inputErrorf("RoiAlign rois must be [num_rois, 4] of the input's type %v, got %v %v", x.DType, rois.DType, rois.Shape)
	}
	bi, ok := batch.Data.([]int64)
	if !ok || batch.Rank() != 1 || len(bi) != rois.Shape[0] {
		return nil, inputErrorf("RoiAlign batch_indices must be INT64 [num_rois] (%d), got %v %v", rois.Shape[0], batch.DType, batch.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	R := rois.Shape[0]
	if (H == 0 || W == 0) && R*C > 0 {
		return nil, inputErrorf("RoiAlign over an empty feature map (shape %v)", x.Shape)
	}
	rv := rois.Float64s()
	offset := 0.0
	if s.halfPixel {
		offset = 0.5
	}
	type roi struct {
		y0, x0, bh, bw float64
		gh, gw         int
	}
	geo := make([]roi, R)
	samples := 0.0
	for i := range geo {
		c := rv[i*4 : i*4+4]
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, inputErrorf("RoiAlign roi %d is not finite: %v", i, c)
			}
		}
		if bi[i] < 0 || bi[i] >= int64(N) {
			return nil, inputErrorf("RoiAlign batch index %d of roi %d is outside the batch of %d", bi[i], i, N)
		}
		x0, y0 := c[0]*s.scale-offset, c[1]*s.scale-offset
		rw, rh := c[2]*s.scale-offset-x0, c[3]*s.scale-offset-y0
		if !s.halfPixel { // malformed ROIs become 1×1
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		r := roi{y0: y0, x0: x0, bh: rh / float64(s.oh), bw: rw / float64(s.ow), gh: s.sampling, gw: s.sampling}
		if s.sampling == 0 {
			gh, gw := math.Ceil(rh/float64(s.oh)), math.Ceil(rw/float64(s.ow))
			if gh > float64(s.maxSamples) || gw > float64(s.maxSamples) {
				return nil, inputErrorf("RoiAlign roi %d %v needs a sampling grid of %v×%v per bin", i, c, gh, gw)
			}
			r.gh, r.gw = max(int(gh), 0), max(int(gw), 0)
		}
		samples += float64(r.gh) * float64(r.gw) * float64(s.oh*s.ow) * float64(C)
		geo[i] = r
	}
	if samples > float64(s.maxSamples) {
		return nil, inputErrorf("RoiAlign would take %.0f bilinear samples, more than the %d quantserve allows in one call", samples, s.maxSamples)
	}
	out := []int{R, C, s.oh, s.ow}
	return poolFloats("RoiAlign", x, out, func(xs, y []float64) {
		var w [4]float64
		var pos [4]int
		for i, r := range geo {
			count := float64(max(r.gh*r.gw, 1))
			b := int(bi[i])
			for ph := 0; ph < s.oh; ph++ {
				for pw := 0; pw < s.ow; pw++ {
					first := true
					for iy := 0; iy < r.gh; iy++ {
						yy := r.y0 + float64(ph)*r.bh + (float64(iy)+0.5)*r.bh/float64(r.gh)
						for ix := 0; ix < r.gw; ix++ {
							xx := r.x0 + float64(pw)*r.bw + (float64(ix)+0.5)*r.bw/float64(r.gw)
							roiBilinear(yy, xx, H, W, &pos, &w)
							for c := 0; c < C; c++ {
								plane := xs[(b*C+c)*H*W : (b*C+c+1)*H*W]
								o := ((i*C+c)*s.oh+ph)*s.ow + pw
								if !s.max {
									y[o] += w[0]*plane[pos[0]] + w[1]*plane[pos[1]] + w[2]*plane[pos[2]] + w[3]*plane[pos[3]]
									continue
								}
								v := math.Max(math.Max(w[0]*plane[pos[0]], w[1]*plane[pos[1]]), math.Max(w[2]*plane[pos[2]], w[3]*plane[pos[3]]))
								if first || v > y[o] {
									y[o] = v
								}
							}
							first = false
						}
					}
					if !s.max {
						for c := 0; c < C; c++ {
							y[((i*C+c)*s.oh+ph)*s.ow+pw] /= count
						}
					}
				}
			}
		}
	})
}

// roiBilinear sets the four neighbours of (y, x) in an H×W plane and
// their bilinear weights; a point more than one pixel outside the plane
// weighs nothing.
func roiBilinear(y, x float64, H, W int, pos *[4]int, w *[4]float64) {
	if y < -1 || y > float64(H) || x < -1 || x > float64(W) {
		*pos, *w = [4]int{}, [4]float64{}
		return
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= H-1 {
		yl, yh, y = H-1, H-1, float64(H-1)
	}
	if xl >= W-1 {
		xl, xh, x = W-1, W-1, float64(W-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	*pos = [4]int{yl*W + xl, yl*W + xh, yh*W + xl, yh*W + xh}
	*w = [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}
}
