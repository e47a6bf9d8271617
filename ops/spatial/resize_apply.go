package spatial

import (
	"math"
	"slices"
	"sort"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// resizeApply resamples x by plan p. It stops with the request's error
// once the request ends.
func resizeApply(c *ops.Context, x *tensor.Tensor, p *ResizePlan) (*tensor.Tensor, error) {
	total, _ := tensor.NumElements(p.Shape)
	if total == 0 {
		t, err := tensor.New(x.DType, p.Shape)
		if err != nil {
			return nil, ops.InputErrorf("%v", err)
		}
		return t, nil
	}
	if err := c.ReserveTensor(x.DType, p.Shape); err != nil {
		return nil, err
	}
	if p.Nearest {
		src := make([][]int, x.Rank())
		for d := range src {
			src[d] = make([]int, p.Shape[d])
			for i := range src[d] {
				src[d][i] = i
			}
		}
		extrap := false
		for _, ax := range p.Axes {
			s := slices.Clone(ax.Index)
			for o := range s {
				if ax.Outside != nil && ax.Outside[o] {
					s[o], extrap = -1, true
				}
			}
			src[ax.Axis] = s
		}
		var fill *tensor.Tensor
		if extrap {
			var err error
			if fill, err = scalarAs(tensor.Scalar(p.Extrapolation), x.DType); err != nil {
				return nil, err
			}
		}
		return gather(c, x, p.Shape, src, fill)
	}
	shape := slices.Clone(p.Shape)
	if len(p.Axes) == 0 {
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: x.Data}, nil
	}
	switch d := x.Data.(type) {
	case []float32:
		r, err := resizeFloat(c, d, x.Shape, p)
		if err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: r}, nil
	case []float64:
		r, err := resizeFloat(c, d, x.Shape, p)
		if err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: r}, nil
	case []tensor.F16:
		r, err := resizeFloat(c, tensor.HalfToFloat32(d), x.Shape, p)
		if err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: tensor.Float32ToHalf[tensor.F16](r)}, nil
	case []tensor.BF16:
		r, err := resizeFloat(c, tensor.HalfToFloat32(d), x.Shape, p)
		if err != nil {
			return nil, err
		}
		return &tensor.Tensor{DType: x.DType, Shape: shape, Data: tensor.Float32ToHalf[tensor.BF16](r)}, nil
	case []string, []bool:
		return nil, ops.InputErrorf("Resize interpolates numbers only, got %v", x.DType)
	}
	r, err := resizeFloat(c, x.Float64s(), x.Shape, p)
	if err != nil {
		return nil, err
	}
	lo, hi := resizeIntRange(x.DType)
	for p := 0; p < len(r); p += ops.TickEvery {
		q := min(p+ops.TickEvery, len(r))
		if err := c.Tick(q - p); err != nil {
			return nil, err
		}
		for i, v := range r[p:q] {
			r[p+i] = math.Max(math.Min(v, hi), lo)
		}
	}
	return tensorops.CastToContext(c, &tensor.Tensor{DType: tensor.Float64, Shape: shape, Data: r}, x.DType)
}

// resizeIntRange is the range of an integer type, for saturating
// interpolated values.
func resizeIntRange(dt tensor.DataType) (float64, float64) {
	switch dt {
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8
	case tensor.Uint8:
		return 0, math.MaxUint8
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16
	case tensor.Uint16:
		return 0, math.MaxUint16
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32
	case tensor.Uint32:
		return 0, math.MaxUint32
	case tensor.Uint64:
		return 0, 18446744073709549568 // the largest float64 below 2^64
	}
	return -9223372036854775808, 9223372036854774784 // int64
}

// resizeFloat interpolates x (of shape) by p: axis by axis, shrinking
// axes first, or in one pass for the bilinear resizing of the two
// innermost axes that segmentation and detection heads run.
func resizeFloat[T float32 | float64](oc *ops.Context, x []T, shape []int, p *ResizePlan) ([]T, error) {
	r := len(shape)
	axes := slices.Clone(p.Axes)
	sort.SliceStable(axes, func(i, j int) bool {
		return float64(axes[i].Out)*float64(axes[j].In) < float64(axes[j].Out)*float64(axes[i].In)
	})
	var out []T
	var err error
	if f, ok := any(x).([]float32); ok && len(axes) == 2 && bilinear2D(axes, r) {
		ya, xa := &axes[0], &axes[1]
		if ya.Axis > xa.Axis {
			ya, xa = xa, ya
		}
		planes := 1
		for _, d := range shape[:r-2] {
			planes *= d
		}
		var o []float32
		if o, err = resizeBilinear2D(oc, f, planes, shape[r-2], shape[r-1], ya, xa); err != nil {
			return nil, err
		}
		out = any(o).([]T)
	} else {
		cur := slices.Clone(shape)
		out = x
		for i := range axes {
			ax := &axes[i]
			outer, inner := 1, 1
			for _, d := range cur[:ax.Axis] {
				outer *= d
			}
			for _, d := range cur[ax.Axis+1:] {
				inner *= d
			}
			if out, err = resizePass(oc, out, outer, ax.In, inner, ax); err != nil {
				return nil, err
			}
			cur[ax.Axis] = ax.Out
		}
	}
	if err := resizeExtrapolate(oc, out, p); err != nil {
		return nil, err
	}
	return out, nil
}

// bilinear2D reports whether the two axes are the innermost two of a
// rank-r tensor, each with two taps and nothing to extrapolate: the case
// resizeBilinear2D runs.
func bilinear2D(axes []ResizeAxis, r int) bool {
	for _, ax := range axes {
		if ax.Taps != 2 || ax.Outside != nil {
			return false
		}
	}
	a, b := min(axes[0].Axis, axes[1].Axis), max(axes[0].Axis, axes[1].Axis)
	return r >= 2 && a == r-2 && b == r-1
}

// resizeWeights converts an axis's weights to T.
func resizeWeights[T float32 | float64](ax *ResizeAxis) []T {
	w := make([]T, len(ax.Weight))
	for i, v := range ax.Weight {
		w[i] = T(v)
	}
	return w
}

// resizePass resamples the middle axis of src viewed as (outer, in,
// inner). Contiguous ranges of the output, which may cut its rows of
// inner elements, split across the engine's cores (ParallelRows), each
// element computed alone with its taps in order.
func resizePass[T float32 | float64](oc *ops.Context, src []T, outer, in, inner int, ax *ResizeAxis) ([]T, error) {
	out := ax.Out
	dst := make([]T, outer*out*inner)
	w := resizeWeights[T](ax)
	taps := ax.Taps
	err := oc.ParallelRows(len(dst), taps*tapCost, func(e0, e1 int) {
		for r := e0 / inner; r*inner < e1; r++ {
			o, j := r/out, r%out
			lo, hi := max(e0-r*inner, 0), min(e1-r*inner, inner)
			s := src[o*in*inner : (o+1)*in*inner]
			row := dst[r*inner+lo : r*inner+hi]
			if inner == 1 {
				var acc T
				for k := j * taps; k < (j+1)*taps; k++ {
					acc += w[k] * s[ax.Index[k]]
				}
				row[0] = acc
				continue
			}
			if taps == 2 {
				i0, i1 := ax.Index[2*j], ax.Index[2*j+1]
				w0, w1 := w[2*j], w[2*j+1]
				a, b := s[i0*inner+lo:i0*inner+hi], s[i1*inner+lo:i1*inner+hi]
				for i := range row {
					row[i] = w0*a[i] + w1*b[i]
				}
				continue
			}
			for k := j * taps; k < (j+1)*taps; k++ {
				wk := w[k]
				if wk == 0 {
					continue
				}
				a := s[ax.Index[k]*inner+lo : ax.Index[k]*inner+hi]
				for i := range row {
					row[i] += wk * a[i]
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// resizeBilinear2D resizes planes of ih×iw float32 pixels to
// ya.Out×xa.Out with two taps per axis. Each output row blends two
// horizontally resized input rows; those are computed once and kept while
// consecutive output rows read them. The planes split across the
// engine's cores (ParallelRows), and when there are too few of them to
// share, the output rows of each: a range starting mid-plane resizes its
// first input rows again, which gives the same bits.
func resizeBilinear2D(oc *ops.Context, src []float32, planes, ih, iw int, ya, xa *ResizeAxis) ([]float32, error) {
	oh, ow := ya.Out, xa.Out
	dst := make([]float32, planes*oh*ow)
	x0, x1 := make([]int, ow), make([]int, ow)
	wx0, wx1 := make([]float32, ow), make([]float32, ow)
	for x := 0; x < ow; x++ {
		x0[x], x1[x] = xa.Index[2*x], xa.Index[2*x+1]
		wx0[x], wx1[x] = float32(xa.Weight[2*x]), float32(xa.Weight[2*x+1])
	}
	wy := resizeWeights[float32](ya)
	rowsPer := oh // output rows a unit holds: a plane, or one row
	if planes < 8 {
		rowsPer = 1
	}
	err := oc.ParallelRows(planes*oh/rowsPer, rowsPer*4*ow*tapCost, func(u0, u1 int) {
		var cache [2][]float32
		cache[0], cache[1] = make([]float32, ow), make([]float32, ow)
		for r, end := u0*rowsPer, u1*rowsPer; r < end; {
			p, first := r/oh, r%oh
			last := min(oh, first+end-r)
			r += last - first
			in := src[p*ih*iw : (p+1)*ih*iw]
			out := dst[p*oh*ow : (p+1)*oh*ow]
			held := [2]int{-1, -1}
			row := func(y, keep int) []float32 {
				if held[0] == y {
					return cache[0]
				}
				if held[1] == y {
					return cache[1]
				}
				slot := 0
				if held[0] == keep {
					slot = 1
				}
				h := cache[slot]
				resizeRow(h, in[y*iw:(y+1)*iw], x0, x1, wx0, wx1)
				held[slot] = y
				return h
			}
			for oy := first; oy < last; oy++ {
				y0, y1 := ya.Index[2*oy], ya.Index[2*oy+1]
				w0, w1 := wy[2*oy], wy[2*oy+1]
				o := out[oy*ow : (oy+1)*ow]
				switch {
				case w1 == 0 || y0 == y1 && w0+w1 == 1:
					r0 := row(y0, -1)
					if w0+w1 == 1 {
						copy(o, r0)
					} else {
						for x := range o {
							o[x] = (w0 + w1) * r0[x]
						}
					}
				case w0 == 0:
					copy(o, row(y1, -1))
				default:
					blendRow(o, row(y0, -1), row(y1, y0), w0, w1)
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// resizeRow sets h[x] = wx0[x]·line[x0[x]] + wx1[x]·line[x1[x]]: one
// input row resized horizontally with two taps.
func resizeRow(h, line []float32, x0, x1 []int, wx0, wx1 []float32) {
	n := len(h)
	x0, x1, wx0, wx1 = x0[:n], x1[:n], wx0[:n], wx1[:n]
	for x := range h {
		h[x] = wx0[x]*line[x0[x]] + wx1[x]*line[x1[x]]
	}
}

// blendRow sets o = w0·r0 + w1·r1.
func blendRow(o, r0, r1 []float32, w0, w1 float32) {
	r0, r1 = r0[:len(o)], r1[:len(o)]
	for x := range o {
		o[x] = w0*r0[x] + w1*r1[x]
	}
}

// resizeExtrapolate writes the extrapolation value where any axis samples
// outside the input (tf_crop_and_resize).
func resizeExtrapolate[T float32 | float64](oc *ops.Context, out []T, p *ResizePlan) error {
	outside := make([][]bool, len(p.Shape))
	some := false
	for _, ax := range p.Axes {
		if ax.Outside != nil && slices.Contains(ax.Outside, true) {
			outside[ax.Axis], some = ax.Outside, true
		}
	}
	if !some {
		return nil
	}
	v := T(p.Extrapolation)
	it := tensor.NewIter(p.Shape)
	for i := 0; it.Next(); i++ {
		if err := oc.Tick(1); err != nil {
			return err
		}
		for d, o := range it.Index() {
			if outside[d] != nil && outside[d][o] {
				out[i] = v
				break
			}
		}
	}
	return nil
}
