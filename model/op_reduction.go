package model

import (
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// The reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare.
// Their axes are an attribute up to opset 12 (ReduceSum) or 17 (the
// others) and an optional input after; the semantics are otherwise the
// same in every opset, the later ones only widening the types (INT8 and
// UINT8 for ReduceMax/Min at 12, BFLOAT16 at 13, BOOL for ReduceMax/Min
// at 20). Reducing an empty set of values gives the reduction's identity:
// 0 for the sums and norms, 1 for the product, -inf for ReduceMax (the
// type's minimum for integers, false for BOOL), +inf for ReduceMin, -inf
// for ReduceLogSum and ReduceLogSumExp, and NaN (0/0) for ReduceMean.

func init() {
	for _, op := range reductions {
		register(Descriptor{Type: op.name, Since: 1, Until: op.axesInput - 1, Fold: true}, func(n *node, at *ReduceAttrs) (opFunc, error) {
			if err := n.checkArity(1, 1, 1, 1); err != nil {
				return nil, err
			}
			if err := requireInputs(n, 1); err != nil {
				return nil, err
			}
			return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				x := in[0]
				red, err := at.ReducedAxes(x.Rank(), nil)
				if err != nil {
					return nil, err
				}
				y, err := reduceTensor(op.name, op.kind, x, red, at.KeepDims)
				if err != nil {
					return nil, err
				}
				return []*tensor.Tensor{y}, nil
			}, nil
		})
		register(Descriptor{Type: op.name, Since: op.axesInput, Fold: true}, func(n *node, at *ReduceInputAttrs) (opFunc, error) {
			if err := n.checkArity(1, 2, 1, 1); err != nil {
				return nil, err
			}
			if err := requireInputs(n, 1); err != nil {
				return nil, err
			}
			return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				x := in[0]
				var axes *tensor.Tensor
				if len(in) > 1 {
					axes = in[1]
				}
				red, err := at.ReducedAxes(x.Rank(), axes)
				if err != nil {
					return nil, err
				}
				y, err := reduceTensor(op.name, op.kind, x, red, at.KeepDims)
				if err != nil {
					return nil, err
				}
				return []*tensor.Tensor{y}, nil
			}, nil
		})
	}
}

type reduceKind uint8

const (
	reduceSum reduceKind = iota
	reduceMean
	reduceMax
	reduceMin
	reduceProd
	reduceL1
	reduceL2
	reduceLogSum
	reduceLogSumExp
	reduceSumSquare
)

// reductions lists each operator and the opset from which its axes are an
// input.
var reductions = []struct {
	name      string
	kind      reduceKind
	axesInput int64
}{
	{"ReduceSum", reduceSum, 13},
	{"ReduceMean", reduceMean, 18},
	{"ReduceMax", reduceMax, 18},
	{"ReduceMin", reduceMin, 18},
	{"ReduceProd", reduceProd, 18},
	{"ReduceL1", reduceL1, 18},
	{"ReduceL2", reduceL2, 18},
	{"ReduceLogSum", reduceLogSum, 18},
	{"ReduceLogSumExp", reduceLogSumExp, 18},
	{"ReduceSumSquare", reduceSumSquare, 18},
}

// Reduction is the attribute struct of a reduction in either form; the
// gradient code uses it to recover which axes a node reduced.
type Reduction interface {
	// ReducedAxes marks the axes of a rank-r input the node reduces,
	// given its axes input (nil when absent or in the attribute form).
	ReducedAxes(rank int, axes *tensor.Tensor) ([]bool, error)
	// Keep reports whether reduced axes stay as dimensions of size 1.
	Keep() bool
}

// ReduceAttrs are the attributes of the reductions while the axes are an
// attribute (ReduceSum before opset 13, the others before 18).
type ReduceAttrs struct {
	Axes     []int64 `onnx:"axes"` // nil: every axis
	KeepDims bool    `onnx:"keepdims" default:"true"`
}

// ReduceInputAttrs are their attributes once the axes are an input.
type ReduceInputAttrs struct {
	KeepDims          bool `onnx:"keepdims" default:"true"`
	NoopWithEmptyAxes bool `onnx:"noop_with_empty_axes"`
}

// ReducedAxes implements Reduction: no axes means every axis.
func (a *ReduceAttrs) ReducedAxes(rank int, _ *tensor.Tensor) ([]bool, error) {
	return reducedAxes(rank, a.Axes, false)
}

// Keep implements Reduction.
func (a *ReduceAttrs) Keep() bool { return a.KeepDims }

// ReducedAxes implements Reduction: absent or empty axes mean every axis,
// or none with noop_with_empty_axes.
func (a *ReduceInputAttrs) ReducedAxes(rank int, axes *tensor.Tensor) ([]bool, error) {
	var list []int64
	if axes != nil {
		if axes.DType != tensor.Int64 || axes.Rank() > 1 {
			return nil, inputErrorf("the axes input must be a 1-D INT64 tensor, got %v%s", axes.DType, tensor.ShapeString(axes.Shape))
		}
		list = axes.Data.([]int64)
	}
	return reducedAxes(rank, list, a.NoopWithEmptyAxes)
}

// Keep implements Reduction.
func (a *ReduceInputAttrs) Keep() bool { return a.KeepDims }

func reducedAxes(rank int, axes []int64, noop bool) ([]bool, error) {
	red := make([]bool, rank)
	if len(axes) == 0 {
		if !noop {
			for i := range red {
				red[i] = true
			}
		}
		return red, nil
	}
	for _, ax := range axes {
		a, err := normAxis(ax, rank)
		if err != nil {
			return nil, err
		}
		if red[a] {
			return nil, inputErrorf("axis %d is reduced twice", ax)
		}
		red[a] = true
	}
	return red, nil
}

// reduceGeom is a reduction of one shape over the axes it marks, with
// the shape coalesced for the loops: size-1 axes dropped and runs of
// adjacent axes that are all reduced or all kept merged into one.
type reduceGeom struct {
	out   []int // the output's shape
	n     int   // output elements
	count int   // input elements reduced into each output element

	dims   []int  // coalesced dimensions (at least one)
	red    []bool // which are reduced
	inStr  []int  // their strides in the input
	outStr []int  // their strides in the output; 0 where reduced
}

func newReduceGeom(shape []int, red []bool, keep bool) (*reduceGeom, error) {
	g := &reduceGeom{count: 1}
	for i, d := range shape {
		switch {
		case !red[i]:
			g.out = append(g.out, d)
		case keep:
			g.out = append(g.out, 1)
		}
		if red[i] {
			g.count *= d // bounded: shape is a real tensor's
		}
		if d == 1 {
			continue
		}
		if k := len(g.dims) - 1; k >= 0 && g.red[k] == red[i] {
			g.dims[k] *= d
			continue
		}
		g.dims = append(g.dims, d)
		g.red = append(g.red, red[i])
	}
	if len(g.dims) == 0 {
		g.dims, g.red = []int{1}, []bool{false}
	}
	var err error
	if g.n, err = tensor.NumElements(g.out); err != nil {
		return nil, err
	}
	r := len(g.dims)
	g.inStr, g.outStr = make([]int, r), make([]int, r)
	in, out := 1, 1
	for i := r - 1; i >= 0; i-- {
		g.inStr[i] = in
		in *= g.dims[i]
		if !g.red[i] {
			g.outStr[i] = out
			out *= g.dims[i]
		}
	}
	return g, nil
}

// inner is the length of the runs walk visits and whether they are
// reduced.
func (g *reduceGeom) inner() (int, bool) { return g.dims[len(g.dims)-1], g.red[len(g.red)-1] }

// walk calls f for every run along the last coalesced dimension with the
// offsets of its first element in the input and the output. A reduced run
// reduces into out[o]; a kept run's element j goes to out[o+j].
func (g *reduceGeom) walk(f func(i, o int)) {
	r := len(g.dims)
	for _, d := range g.dims {
		if d == 0 {
			return
		}
	}
	it := tensor.NewIter(g.dims[:r-1], g.inStr[:r-1], g.outStr[:r-1])
	for it.Next() {
		f(it.Off(0), it.Off(1))
	}
}

// reduceTensor reduces x over the axes red marks.
func reduceTensor(op string, kind reduceKind, x *tensor.Tensor, red []bool, keep bool) (*tensor.Tensor, error) {
	g, err := newReduceGeom(x.Shape, red, keep)
	if err != nil {
		return nil, err
	}
	var out any
	switch d := x.Data.(type) {
	case []float32:
		out = reduceToFloat32s(reduceFloat(kind, d, g))
	case []float64:
		out = reduceFloat(kind, d, g)
	case []tensor.F16:
		acc := reduceFloat(kind, tensor.HalfToFloat32(d), g)
		h := make([]tensor.F16, len(acc))
		for i, v := range acc {
			h[i] = tensor.F16FromFloat64(v)
		}
		out = h
	case []tensor.BF16:
		acc := reduceFloat(kind, tensor.HalfToFloat32(d), g)
		h := make([]tensor.BF16, len(acc))
		for i, v := range acc {
			h[i] = tensor.BF16FromFloat64(v)
		}
		out = h
	case []int8:
		out = reduceInt(kind, d, g)
	case []uint8:
		out = reduceInt(kind, d, g)
	case []int16:
		out = reduceInt(kind, d, g)
	case []uint16:
		out = reduceInt(kind, d, g)
	case []int32:
		out = reduceInt(kind, d, g)
	case []uint32:
		out = reduceInt(kind, d, g)
	case []int64:
		out = reduceInt(kind, d, g)
	case []uint64:
		out = reduceInt(kind, d, g)
	case []bool:
		if kind != reduceMax && kind != reduceMin {
			return nil, inputErrorf("%s does not take BOOL", op)
		}
		out = reduceBool(kind == reduceMax, d, g)
	default:
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: g.out, Data: out}, nil
}

func reduceToFloat32s(x []float64) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = float32(v)
	}
	return r
}

// reduceFloat reduces floating-point x, accumulating in float64 across
// runs; a reduced run (the last axes, contiguous) is summed in blocks in
// x's own type with independent partial sums, so float32 rows stay tight
// float32 loops.
func reduceFloat[T float32 | float64](kind reduceKind, x []T, g *reduceGeom) []float64 {
	acc := make([]float64, g.n)
	inner, innerRed := g.inner()
	fill := func(v float64) {
		for i := range acc {
			acc[i] = v
		}
	}
	// sumRuns adds row(run) into acc for reduced runs, and for kept runs
	// each element mapped by sq (v², else |v| if abs, else v).
	sumRuns := func(row func([]T) float64, abs, sq bool) {
		if innerRed {
			g.walk(func(i, o int) { acc[o] += row(x[i : i+inner]) })
			return
		}
		g.walk(func(i, o int) {
			a, xs := acc[o:o+inner], x[i:i+inner]
			switch {
			case sq:
				for j, v := range xs {
					a[j] += float64(v) * float64(v)
				}
			case abs:
				for j, v := range xs {
					a[j] += math.Abs(float64(v))
				}
			default:
				for j, v := range xs {
					a[j] += float64(v)
				}
			}
		})
	}
	switch kind {
	case reduceSum, reduceMean, reduceLogSum:
		sumRuns(rowSum[T], false, false)
	case reduceL1:
		sumRuns(rowSumAbs[T], true, false)
	case reduceL2, reduceSumSquare:
		sumRuns(rowSumSquares[T], false, true)
	case reduceMax, reduceMin:
		isMax := kind == reduceMax
		fill(math.Inf(1))
		if isMax {
			fill(math.Inf(-1))
		}
		if innerRed {
			g.walk(func(i, o int) { acc[o] = pickExtreme(acc[o], float64(rowExtreme(x[i:i+inner], isMax)), isMax) })
		} else {
			g.walk(func(i, o int) {
				a := acc[o : o+inner]
				for j, v := range x[i : i+inner] {
					a[j] = pickExtreme(a[j], float64(v), isMax)
				}
			})
		}
	case reduceProd:
		fill(1)
		g.walk(func(i, o int) {
			if innerRed {
				p := acc[o]
				for _, v := range x[i : i+inner] {
					p *= float64(v)
				}
				acc[o] = p
				return
			}
			a := acc[o : o+inner]
			for j, v := range x[i : i+inner] {
				a[j] *= float64(v)
			}
		})
	case reduceLogSumExp:
		// log Σ exp(x) = m + log Σ exp(x - m) with m the maximum, so no
		// term overflows.
		m := reduceFloat(reduceMax, x, g)
		g.walk(func(i, o int) {
			if innerRed {
				acc[o] += rowSumExp(x[i:i+inner], m[o])
				return
			}
			a, mm := acc[o:o+inner], m[o:o+inner]
			for j, v := range x[i : i+inner] {
				if !math.IsInf(mm[j], 0) {
					a[j] += math.Exp(float64(v) - mm[j])
				}
			}
		})
		for i, s := range acc {
			if math.IsInf(m[i], 0) || math.IsNaN(m[i]) {
				acc[i] = m[i] // every term -inf (or the empty set), or +inf, or NaN
			} else {
				acc[i] = m[i] + math.Log(s)
			}
		}
		return acc
	}
	switch kind {
	case reduceMean:
		c := float64(g.count)
		for i := range acc {
			acc[i] /= c
		}
	case reduceL2:
		for i, v := range acc {
			acc[i] = math.Sqrt(v)
		}
	case reduceLogSum:
		for i, v := range acc {
			acc[i] = math.Log(v)
		}
	}
	return acc
}

// pickExtreme returns the larger (isMax) or smaller of a and v; NaN wins.
func pickExtreme(a, v float64, isMax bool) float64 {
	switch {
	case v != v || a != a:
		return math.NaN()
	case isMax && v > a, !isMax && v < a:
		return v
	}
	return a
}

// reduceBlock bounds the run of elements summed in x's own type before
// the partial sums go into the float64 total.
const reduceBlock = 512

// rowSum returns Σ x: eight partial sums in T per block, blocks added in
// float64.
func rowSum[T float32 | float64](x []T) float64 {
	var total float64
	for len(x) > 0 {
		b := x[:min(len(x), reduceBlock)]
		x = x[len(b):]
		var s0, s1, s2, s3, s4, s5, s6, s7 T
		for len(b) >= 8 {
			v := b[:8:8]
			s0 += v[0]
			s1 += v[1]
			s2 += v[2]
			s3 += v[3]
			s4 += v[4]
			s5 += v[5]
			s6 += v[6]
			s7 += v[7]
			b = b[8:]
		}
		for _, v := range b {
			s0 += v
		}
		total += float64(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
	}
	return total
}

// rowSumAbs returns Σ |x| as rowSum does.
func rowSumAbs[T float32 | float64](x []T) float64 {
	abs := func(v T) T {
		if v < 0 {
			return -v
		}
		return v
	}
	var total float64
	for len(x) > 0 {
		b := x[:min(len(x), reduceBlock)]
		x = x[len(b):]
		var s0, s1, s2, s3 T
		for len(b) >= 4 {
			v := b[:4:4]
			s0 += abs(v[0])
			s1 += abs(v[1])
			s2 += abs(v[2])
			s3 += abs(v[3])
			b = b[4:]
		}
		for _, v := range b {
			s0 += abs(v)
		}
		total += float64((s0 + s1) + (s2 + s3))
	}
	return total
}

// rowSumSquares returns Σ x² as rowSum does.
func rowSumSquares[T float32 | float64](x []T) float64 {
	var total float64
	for len(x) > 0 {
		b := x[:min(len(x), reduceBlock)]
		x = x[len(b):]
		var s0, s1, s2, s3, s4, s5, s6, s7 T
		for len(b) >= 8 {
			v := b[:8:8]
			s0 += v[0] * v[0]
			s1 += v[1] * v[1]
			s2 += v[2] * v[2]
			s3 += v[3] * v[3]
			s4 += v[4] * v[4]
			s5 += v[5] * v[5]
			s6 += v[6] * v[6]
			s7 += v[7] * v[7]
			b = b[8:]
		}
		for _, v := range b {
			s0 += v * v
		}
		total += float64(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
	}
	return total
}

// rowExtreme returns the maximum (isMax) or minimum of x, NaN if any is
// NaN, ∓inf for an empty x.
func rowExtreme[T float32 | float64](x []T, isMax bool) T {
	m := T(math.Inf(1))
	if isMax {
		m = T(math.Inf(-1))
	}
	nan := false
	if isMax {
		for _, v := range x {
			if v > m {
				m = v
			}
			nan = nan || v != v
		}
	} else {
		for _, v := range x {
			if v < m {
				m = v
			}
			nan = nan || v != v
		}
	}
	if nan {
		return T(math.NaN())
	}
	return m
}

// rowSumExp returns Σ exp(x - m) for m the maximum of x (and of the runs
// reducing into the same output); an infinite m contributes nothing, the
// caller handles it.
func rowSumExp[T float32 | float64](x []T, m float64) float64 {
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return 0
	}
	var s float64
	if xs, ok := any(x).([]float32); ok {
		mm := float32(m)
		for len(xs) > 0 {
			b := xs[:min(len(xs), reduceBlock)]
			xs = xs[len(b):]
			var p float32
			for _, v := range b {
				p += exp32(v - mm)
			}
			s += float64(p)
		}
		return s
	}
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return s
}

// reduceInt reduces integers in their own type (sums wrap as numpy's do);
// ReduceMean truncates, and ReduceL2, ReduceLogSum and ReduceLogSumExp
// are computed in float64 and truncated.
func reduceInt[T tensor.Integer](kind reduceKind, x []T, g *reduceGeom) []T {
	switch kind {
	case reduceL2, reduceLogSum, reduceLogSumExp:
		f := make([]float64, len(x))
		for i, v := range x {
			f[i] = float64(v)
		}
		acc := reduceFloat(kind, f, g)
		out := make([]T, len(acc))
		lo, hi := intLimits[T]()
		for i, v := range acc {
			switch {
			case math.IsNaN(v):
			case v <= float64(lo):
				out[i] = lo
			case v >= float64(hi):
				out[i] = hi
			default:
				out[i] = T(v)
			}
		}
		return out
	}
	acc := make([]T, g.n)
	lo, hi := intLimits[T]()
	var step func(a, v T) T
	switch kind {
	case reduceSum, reduceMean:
		step = func(a, v T) T { return a + v }
	case reduceL1:
		step = func(a, v T) T {
			if v < 0 {
				v = -v
			}
			return a + v
		}
	case reduceSumSquare:
		step = func(a, v T) T { return a + v*v }
	case reduceProd:
		step = func(a, v T) T { return a * v }
		for i := range acc {
			acc[i] = 1
		}
	case reduceMax:
		step = func(a, v T) T { return max(a, v) }
		for i := range acc {
			acc[i] = lo
		}
	case reduceMin:
		step = func(a, v T) T { return min(a, v) }
		for i := range acc {
			acc[i] = hi
		}
	}
	inner, innerRed := g.inner()
	g.walk(func(i, o int) {
		if innerRed {
			a := acc[o]
			for _, v := range x[i : i+inner] {
				a = step(a, v)
			}
			acc[o] = a
			return
		}
		a := acc[o : o+inner]
		for j, v := range x[i : i+inner] {
			a[j] = step(a[j], v)
		}
	})
	if kind == reduceMean && g.count > 0 {
		c := T(g.count)
		if int(c) == g.count {
			for i := range acc {
				acc[i] /= c
			}
		} else { // the count does not fit T: go through float64
			for i, v := range acc {
				acc[i] = T(float64(v) / float64(g.count))
			}
		}
	}
	return acc
}

// intLimits returns the smallest and largest values of T.
func intLimits[T tensor.Integer]() (lo, hi T) {
	var zero T
	hi = ^zero
	if hi < zero { // signed: all ones is -1
		bits := 8 * tensor.DTypeOf[T]().Size()
		hi = T(uint64(1)<<(bits-1) - 1)
		lo = -hi - 1
		return lo, hi
	}
	return 0, hi
}

// reduceBool implements ReduceMax (any) and ReduceMin (all) on BOOL, with
// false < true.
func reduceBool(isMax bool, x []bool, g *reduceGeom) []bool {
	acc := make([]bool, g.n)
	if !isMax {
		for i := range acc {
			acc[i] = true
		}
	}
	inner, innerRed := g.inner()
	g.walk(func(i, o int) {
		if innerRed {
			a := acc[o]
			for _, v := range x[i : i+inner] {
				if isMax {
					a = a || v
				} else {
					a = a && v
				}
			}
			acc[o] = a
			return
		}
		a := acc[o : o+inner]
		for j, v := range x[i : i+inner] {
			if isMax {
				a[j] = a[j] || v
			} else {
				a[j] = a[j] && v
			}
		}
	})
	return acc
}

// exp32 returns e**x in float32, within 1 ulp of math.Exp rounded to
// float32.
func exp32(x float32) float32 {
	if x >= expMin32 && x <= expMax32 {
		y, k := expParts32(x)
		return y * math.Float32frombits(uint32(k+127)<<23)
	}
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -103.97208:
		return 0
	}
	// 2**k alone would overflow or be subnormal: scale in two steps
	y, k := expParts32(x)
	if k > 0 {
		return y * math.Float32frombits(uint32(k-1+127)<<23) * 2
	}
	return y * math.Float32frombits(uint32(k+24+127)<<23) * (1.0 / (1 << 24))
}

const (
	expMin32 = -87.33654 // e**x is a normal float32 from here
	expMax32 = 88.37626  // and 2**round(x·log2 e) one to here (127.5·ln2)
)

// expParts32 returns y and k with e**x = y·2**k: x = k·ln2 + r with
// |r| <= ln2/2 and y = e**r = 1 + r + r²·P(r) (the Cephes expf
// polynomial). Adding 1.5·2²³ rounds x·log2(e) to the integer k, which
// the sum's low mantissa bits then hold. |x| < 2²¹.
func expParts32(x float32) (float32, int32) {
	const (
		ln2Hi = 0.693359375
		ln2Lo = -2.12194440e-4
		log2e = 1.44269504088896341
		magic = 12582912 // 1.5·2²³
	)
	t := float32(x*log2e) + magic
	k := int32(math.Float32bits(t)) - 0x4b400000
	n := t - magic
	r := x - n*ln2Hi - n*ln2Lo
	p := float32(1.9875691500e-4)*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	return p*r*r + r + 1, k
}
