package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/quantserve/quantserve/tensor"
)

func init() {
	// BatchNormalization: spatial until 8; training mode told by extra
	// outputs until 13 (running and saved statistics), by training_mode
	// from 14 (running statistics only). Opsets before 7 (is_test) are
	// older than quantserve loads.
	register(Descriptor{Type: "BatchNormalization", Since: 7, Until: 8, Fold: true}, buildBatchNorm)
	register(Descriptor{Type: "BatchNormalization", Since: 9, Until: 13, Fold: true}, buildBatchNorm)
	register(Descriptor{Type: "BatchNormalization", Since: 14, Fold: true}, buildBatchNorm)
	register(Descriptor{Type: "InstanceNormalization", Since: 6, Fold: true}, buildInstanceNorm)
	// GroupNormalization scales per group at 18, per channel from 21.
	register(Descriptor{Type: "GroupNormalization", Since: 18, Until: 20, Fold: true}, buildGroupNorm)
	register(Descriptor{Type: "GroupNormalization", Since: 21, Fold: true}, buildGroupNorm)
	register(Descriptor{Type: "LRN", Since: 1, Fold: true}, buildLRN)
	register(Descriptor{Type: "MeanVarianceNormalization", Since: 9, Fold: true}, buildMVN)
	register(Descriptor{Type: "LpNormalization", Since: 1, Fold: true}, buildLpNorm)
}

// BatchNormAttrs are BatchNormalization's attributes, and what the
// builder settles at load.
type BatchNormAttrs struct {
	Epsilon      float32 `onnx:"epsilon" default:"1e-05"`
	Momentum     float32 `onnx:"momentum" default:"0.9"`
	Spatial      bool    `onnx:"spatial" default:"true"` // opsets 7–8
	TrainingMode bool    `onnx:"training_mode"`          // opset 14 on

	// Training reports whether the node normalizes by the batch's own
	// statistics: training_mode from opset 14, extra outputs before.
	Training bool
	// Folded is set, in inference, when scale, B, mean and var are all
	// constants: the node then runs Y = X·Scale[c] + Shift[c] and keeps
	// none of the four.
	Folded *BatchNormFold
}

// BatchNormFold is inference BatchNormalization folded into one
// multiply-add per channel: Scale = scale/√(var+ε), Shift = B −
// mean·Scale.
type BatchNormFold struct {
	Scale, Shift     []float64
	scale32, shift32 []float32
}

// InstanceNormAttrs are InstanceNormalization's attributes.
type InstanceNormAttrs struct {
	Epsilon float32 `onnx:"epsilon" default:"1e-05"`
}

// GroupNormAttrs are GroupNormalization's attributes.
type GroupNormAttrs struct {
	Epsilon   float32 `onnx:"epsilon" default:"1e-05"`
	NumGroups *int64  `onnx:"num_groups"`
	StashType int64   `onnx:"stash_type" default:"1"` // opset 21 on
}

// LRNAttrs are LRN's attributes.
type LRNAttrs struct {
	Alpha float32 `onnx:"alpha" default:"0.0001"`
	Beta  float32 `onnx:"beta" default:"0.75"`
	Bias  float32 `onnx:"bias" default:"1"`
	Size  *int64  `onnx:"size"`
}

// MVNAttrs are MeanVarianceNormalization's attributes.
type MVNAttrs struct {
	Axes []int64 `onnx:"axes" default:"0,2,3"`
}

// LpNormAttrs are LpNormalization's attributes.
type LpNormAttrs struct {
	Axis int64 `onnx:"axis" default:"-1"`
	P    int64 `onnx:"p" default:"2"`
}

// isFloatType reports whether dt is a floating-point type quantserve
// computes with.
func isFloatType(dt tensor.DataType) bool {
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
		return true
	}
	return false
}

// normRun applies a float32 or float64 computation to x: FP16 and BF16
// are widened to float32 and the result rounded back once.
//
// An empty x gives an empty result without calling either: the other
// dimensions of a tensor with a zero one may be as large as a request
// likes, and the computations loop over them.
func normRun(op string, x *tensor.Tensor, f32 func([]float32) []float32, f64 func([]float64) []float64) (*tensor.Tensor, error) {
	if !isFloatType(x.DType) {
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	if x.Len() == 0 {
		return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: x.Data}, nil
	}
	var data any
	switch d := x.Data.(type) {
	case []float32:
		data = f32(d)
	case []float64:
		data = f64(d)
	case []tensor.F16, []tensor.BF16:
		f, _ := widenHalf(x)
		data = narrowHalf(x.DType, f32(f))
	default:
		return nil, inputErrorf("%s does not take %v", op, x.DType)
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: data}, nil
}

// affinePlanes returns y = x·a[p] + b[p] for x made of len(a) planes of
// size elements each: the kernel every normalization ends in.
func affinePlanes[T tensor.Float](x []T, a, b []float64, size int) []T {
	y := make([]T, len(x))
	for p := range a {
		xs := x[p*size : (p+1)*size]
		ys := y[p*size : (p+1)*size]
		ys = ys[:len(xs)]
		ap, bp := T(a[p]), T(b[p])
		for i, v := range xs {
			ys[i] = v*ap + bp
		}
	}
	return y
}

// affineChannels is affinePlanes with coefficients per channel, for
// planes laid out as n images of len(a) channels: batch-normalization's
// hot loop.
func affineChannels[T tensor.Float](x []T, a, b []T, size int) []T {
	y := make([]T, len(x))
	c := len(a)
	if c == 0 || size == 0 {
		return y
	}
	for p := 0; p < len(x)/size; p++ {
		xs := x[p*size : (p+1)*size]
		ys := y[p*size : (p+1)*size]
		ys = ys[:len(xs)]
		ap, bp := a[p%c], b[p%c]
		i := 0
		for ; i+4 <= len(xs); i += 4 {
			ys[i] = xs[i]*ap + bp
			ys[i+1] = xs[i+1]*ap + bp
			ys[i+2] = xs[i+2]*ap + bp
			ys[i+3] = xs[i+3]*ap + bp
		}
		for ; i < len(xs); i++ {
			ys[i] = xs[i]*ap + bp
		}
	}
	return y
}

// meanVar returns the mean and population variance of v, in float64 and
// two passes.
func meanVar[T tensor.Float](v []T) (mean, variance float64) {
	if len(v) == 0 {
		return 0, 0
	}
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	mean = s / float64(len(v))
	var q float64
	for _, x := range v {
		d := float64(x) - mean
		q += d * d
	}
	return mean, q / float64(len(v))
}

// Layout views an input of the given shape as [N, C, S]: N images of C
// channels of S elements each. Rank 1 is N samples of one channel; with
// spatial false (opsets 7–8) every element after the first axis is a
// channel of its own.
func (a *BatchNormAttrs) Layout(shape []int) (n, c, s int, err error) {
	return bnLayout(shape, a.Spatial)
}

func bnLayout(shape []int, spatial bool) (n, c, s int, err error) {
	switch {
	case len(shape) == 0:
		return 0, 0, 0, inputErrorf("BatchNormalization takes an input of rank 1 or more")
	case len(shape) == 1:
		return shape[0], 1, 1, nil
	case !spatial:
		return shape[0], prodInts(shape[1:]), 1, nil
	}
	return shape[0], shape[1], prodInts(shape[2:]), nil
}

// bnParams returns scale, B, mean and var as float64, checking they are
// floating-point vectors of one length.
func bnParams(ts []*tensor.Tensor) ([4][]float64, error) {
	var p [4][]float64
	names := [4]string{"scale", "B", "mean", "var"}
	for i, t := range ts {
		if t == nil {
			return p, inputErrorf("BatchNormalization needs %s", names[i])
		}
		if !isFloatType(t.DType) {
			return p, inputErrorf("BatchNormalization %s must be floating-point, got %v", names[i], t.DType)
		}
		p[i] = t.Float64s()
		if len(p[i]) != len(p[0]) {
			return p, inputErrorf("BatchNormalization %s has %d values, scale %d", names[i], len(p[i]), len(p[0]))
		}
	}
	return p, nil
}

func newBatchNormFold(scale, bias, mean, variance []float64, eps float64) *BatchNormFold {
	f := &BatchNormFold{Scale: make([]float64, len(scale)), Shift: make([]float64, len(scale))}
	f.scale32, f.shift32 = make([]float32, len(scale)), make([]float32, len(scale))
	for c := range scale {
		a := scale[c] / math.Sqrt(variance[c]+eps)
		f.Scale[c], f.Shift[c] = a, bias[c]-mean[c]*a
		f.scale32[c], f.shift32[c] = float32(a), float32(f.Shift[c])
	}
	return f
}

// apply runs y = x·Scale[c] + Shift[c] over x laid out as [N, C, S].
func (f *BatchNormFold) apply(x *tensor.Tensor, s int) (*tensor.Tensor, error) {
	return normRun("BatchNormalization", x,
		func(v []float32) []float32 { return affineChannels(v, f.scale32, f.shift32, s) },
		func(v []float64) []float64 { return affineChannels(v, f.Scale, f.Shift, s) })
}

func buildBatchNorm(n *node, at *BatchNormAttrs) (opFunc, error) {
	maxOut := 5
	if n.opset >= 14 {
		maxOut = 3
	}
	if err := n.checkArity(5, 5, 1, maxOut); err != nil {
		return nil, err
	}
	if err := checkAttrOpsets(n, opsetAttr{"spatial", 7, 8}, opsetAttr{"training_mode", 14, 0}); err != nil {
		return nil, err
	}
	extra := slices.ContainsFunc(n.pb.Outputs[1:], func(s string) bool { return s != "" })
	if n.opset >= 14 {
		at.Training = at.TrainingMode
		if extra && !at.Training {
			return nil, fmt.Errorf("outputs running_mean and running_var are defined only with training_mode=1")
		}
	} else {
		at.Training = extra
	}
	eps, momentum := float64(at.Epsilon), float64(at.Momentum)
	spatial := at.Spatial
	if !at.Training && allKnown(n.consts[1:5]) {
		p, err := bnParams(n.consts[1:5])
		if err != nil {
			return nil, err
		}
		at.Folded = newBatchNormFold(p[0], p[1], p[2], p[3], eps)
		for i := 1; i < 5; i++ {
			n.unused[i] = true
		}
	}
	training, folded, opset := at.Training, at.Folded, n.opset
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if !isFloatType(x.DType) {
			return nil, inputErrorf("BatchNormalization does not take %v", x.DType)
		}
		N, C, S, err := bnLayout(x.Shape, spatial)
		if err != nil {
			return nil, err
		}
		if !training {
			f := folded
			if f == nil {
				p, err := bnParams(in[1:5])
				if err != nil {
					return nil, err
				}
				f = newBatchNormFold(p[0], p[1], p[2], p[3], eps)
			}
			if len(f.Scale) != C {
				return nil, inputErrorf("BatchNormalization input %v has %d channels, its scale %d", x.Shape, C, len(f.Scale))
			}
			y, err := f.apply(x, S)
			if err != nil {
				return nil, err
			}
			return []*tensor.Tensor{y}, nil
		}
		p, err := bnParams(in[1:5])
		if err != nil {
			return nil, err
		}
		if len(p[0]) != C {
			return nil, inputErrorf("BatchNormalization input %v has %d channels, its scale %d", x.Shape, C, len(p[0]))
		}
		mean, variance := batchStats(x, N, C, S)
		f := newBatchNormFold(p[0], p[1], mean, variance, eps)
		y, err := f.apply(x, S)
		if err != nil {
			return nil, err
		}
		runMean, runVar := make([]float64, C), make([]float64, C)
		for c := range runMean {
			runMean[c] = p[2][c]*momentum + mean[c]*(1-momentum)
			runVar[c] = p[3][c]*momentum + variance[c]*(1-momentum)
		}
		statShape := in[3].Shape
		if opset >= 14 {
			return []*tensor.Tensor{y, fromFloat64s(in[3].DType, statShape, runMean), fromFloat64s(in[4].DType, in[4].Shape, runVar)}, nil
		}
		return []*tensor.Tensor{y, fromFloat64s(x.DType, statShape, runMean), fromFloat64s(x.DType, statShape, runVar),
			fromFloat64s(x.DType, statShape, mean), fromFloat64s(x.DType, statShape, variance)}, nil
	}, nil
}

// batchStats returns each channel's mean and population variance over
// the batch and spatial positions of x laid out as [N, C, S].
func batchStats(x *tensor.Tensor, N, C, S int) (mean, variance []float64) {
	v := x.Float64s()
	mean, variance = make([]float64, C), make([]float64, C)
	cnt := float64(N * S)
	planes := 0
	if S > 0 {
		planes = len(v) / S // N·C, or 0 for an empty input
	}
	for i := 0; i < planes; i++ {
		for _, e := range v[i*S : (i+1)*S] {
			mean[i%C] += e
		}
	}
	for c := range mean {
		mean[c] /= cnt
	}
	for i := 0; i < planes; i++ {
		m := mean[i%C]
		for _, e := range v[i*S : (i+1)*S] {
			variance[i%C] += (e - m) * (e - m)
		}
	}
	for c := range variance {
		variance[c] /= cnt
	}
	return mean, variance
}

// normParam returns a floating-point scale or bias input as float64,
// checking it has want values.
func normParam(op, name string, t *tensor.Tensor, want int) ([]float64, error) {
	if t == nil || !isFloatType(t.DType) {
		return nil, inputErrorf("%s %s must be a floating-point tensor", op, name)
	}
	if t.Len() != want {
		return nil, inputErrorf("%s %s has %d values (shape %v), want %d", op, name, t.Len(), t.Shape, want)
	}
	return t.Float64s(), nil
}

func buildInstanceNorm(n *node, at *InstanceNormAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	eps := float64(at.Epsilon)
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if x.Rank() < 2 {
			return nil, inputErrorf("InstanceNormalization takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
		}
		N, C, S := x.Shape[0], x.Shape[1], prodInts(x.Shape[2:])
		scale, err := normParam("InstanceNormalization", "scale", in[1], C)
		if err != nil {
			return nil, err
		}
		bias, err := normParam("InstanceNormalization", "B", in[2], C)
		if err != nil {
			return nil, err
		}
		return unaryResult(normRun("InstanceNormalization", x,
			func(v []float32) []float32 { return groupNorm(v, N, C, C, S, scale, bias, true, eps) },
			func(v []float64) []float64 { return groupNorm(v, N, C, C, S, scale, bias, true, eps) }))
	}, nil
}

// groupNorm normalizes each of the G groups of channels of each image of x
// ([N, C, S]) by the group's mean and variance, then scales and shifts by
// scale and bias, given per channel (perChannel) or per group.
func groupNorm[T tensor.Float](x []T, N, C, G, S int, scale, bias []float64, perChannel bool, eps float64) []T {
	if G == 0 || len(x) == 0 {
		return make([]T, len(x))
	}
	a, b := make([]float64, N*C), make([]float64, N*C)
	cg := C / G
	for i := 0; i < N; i++ {
		for g := 0; g < G; g++ {
			off := (i*C + g*cg) * S
			mean, variance := meanVar(x[off : off+cg*S])
			inv := 1 / math.Sqrt(variance+eps)
			for c := g * cg; c < (g+1)*cg; c++ {
				k := g
				if perChannel {
					k = c
				}
				a[i*C+c] = scale[k] * inv
				b[i*C+c] = bias[k] - mean*scale[k]*inv
			}
		}
	}
	return affinePlanes(x, a, b, S)
}

func buildGroupNorm(n *node, at *GroupNormAttrs) (opFunc, error) {
	if err := n.checkArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkAttrOpsets(n, opsetAttr{"stash_type", 21, 0}); err != nil {
		return nil, err
	}
	if at.NumGroups == nil || *at.NumGroups < 1 || *at.NumGroups > tensor.MaxElements {
		return nil, fmt.Errorf("GroupNormalization needs num_groups >= 1")
	}
	switch at.StashType {
	case 1, 10, 11, 16: // float, float16, double, bfloat16: quantserve computes stage one in float64 for all
	default:
		return nil, fmt.Errorf("GroupNormalization stash_type %d is not a floating-point type", at.StashType)
	}
	G, eps, perChannel := int(*at.NumGroups), float64(at.Epsilon), n.opset >= 21
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		if x.Rank() < 2 {
			return nil, inputErrorf("GroupNormalization takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
		}
		N, C, S := x.Shape[0], x.Shape[1], prodInts(x.Shape[2:])
		if C%G != 0 {
			return nil, inputErrorf("GroupNormalization: %d channels do not split into %d groups", C, G)
		}
		want := G
		if perChannel {
			want = C
		}
		scale, err := normParam("GroupNormalization", "scale", in[1], want)
		if err != nil {
			return nil, err
		}
		bias, err := normParam("GroupNormalization", "bias", in[2], want)
		if err != nil {
			return nil, err
		}
		return unaryResult(normRun("GroupNormalization", x,
			func(v []float32) []float32 { return groupNorm(v, N, C, G, S, scale, bias, perChannel, eps) },
			func(v []float64) []float64 { return groupNorm(v, N, C, G, S, scale, bias, perChannel, eps) }))
	}, nil
}

func buildLRN(n *node, at *LRNAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Size == nil || *at.Size < 1 || *at.Size > tensor.MaxElements {
		return nil, fmt.Errorf("LRN needs size >= 1")
	}
	size := int(*at.Size)
	alpha, beta, bias := float64(at.Alpha), float64(at.Beta), float64(at.Bias)
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() < 2 {
			return nil, inputErrorf("LRN takes an input of rank 2 or more (N, C, ...), got shape %v", x.Shape)
		}
		N, C, S := x.Shape[0], x.Shape[1], prodInts(x.Shape[2:])
		return normRun("LRN", x,
			func(v []float32) []float32 { return lrn(v, N, C, S, size, alpha, beta, bias) },
			func(v []float64) []float64 { return lrn(v, N, C, S, size, alpha, beta, bias) })
	}), nil
}

// lrn divides each element by (bias + alpha/size · Σ x²)^beta, the sum
// over the channels from c − ⌊(size−1)/2⌋ to c + ⌈(size−1)/2⌉.
func lrn[T tensor.Float](x []T, N, C, S, size int, alpha, beta, bias float64) []T {
	y := make([]T, len(x))
	lo, hi := (size-1)/2, (size-1)-(size-1)/2
	acc := make([]float64, S)
	k := alpha / float64(size)
	for i := 0; i < N; i++ {
		img := x[i*C*S : (i+1)*C*S]
		for c := 0; c < C; c++ {
			clear(acc)
			for c2 := max(0, c-lo); c2 <= min(C-1, c+hi); c2++ {
				for j, v := range img[c2*S : (c2+1)*S] {
					acc[j] += float64(v) * float64(v)
				}
			}
			ys := y[(i*C+c)*S : (i*C+c+1)*S]
			for j, v := range img[c*S : (c+1)*S] {
				ys[j] = T(float64(v) * lrnPow(bias+k*acc[j], beta))
			}
		}
	}
	return y
}

// lrnPow returns t^-beta, with the common exponents in square roots.
func lrnPow(t, beta float64) float64 {
	switch beta {
	case 0.75:
		s := math.Sqrt(t)
		return 1 / (s * math.Sqrt(s))
	case 0.5:
		return 1 / math.Sqrt(t)
	case 1:
		return 1 / t
	}
	return math.Pow(t, -beta)
}

func buildMVN(n *node, at *MVNAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	axes := at.Axes
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if !isFloatType(x.DType) {
			return nil, inputErrorf("MeanVarianceNormalization does not take %v", x.DType)
		}
		kept := slices.Clone(x.Shape)
		for _, a := range axes {
			ax, err := normAxis(a, x.Rank())
			if err != nil {
				return nil, err
			}
			kept[ax] = 1
		}
		if x.Len() == 0 {
			return x, nil
		}
		groups := prodInts(kept)
		st := tensor.BroadcastStrides(kept, x.Shape)
		v := x.Float64s()
		sum, sq, cnt := make([]float64, groups), make([]float64, groups), make([]float64, groups)
		it := tensor.NewIter(x.Shape, st)
		for i := 0; it.Next(); i++ {
			sum[it.Off(0)] += v[i]
			cnt[it.Off(0)]++
		}
		for g := range sum {
			sum[g] /= cnt[g] // the mean
		}
		it = tensor.NewIter(x.Shape, st)
		for i := 0; it.Next(); i++ {
			d := v[i] - sum[it.Off(0)]
			sq[it.Off(0)] += d * d
		}
		for g := range sq {
			sq[g] = math.Sqrt(sq[g]/cnt[g]) + 1e-9 // ONNX's function adds 1e-9 to the deviation
		}
		it = tensor.NewIter(x.Shape, st)
		for i := 0; it.Next(); i++ {
			v[i] = (v[i] - sum[it.Off(0)]) / sq[it.Off(0)]
		}
		return fromFloat64s(x.DType, x.Shape, v), nil
	}), nil
}

func buildLpNorm(n *node, at *LpNormAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.P != 1 && at.P != 2 {
		return nil, fmt.Errorf("LpNormalization p = %d: ONNX defines p = 1 and p = 2", at.P)
	}
	axis, p := at.Axis, at.P
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		if x.Rank() == 0 {
			return nil, inputErrorf("LpNormalization takes an input of rank 1 or more")
		}
		a, err := normAxis(axis, x.Rank())
		if err != nil {
			return nil, err
		}
		outer, dim, inner := prodInts(x.Shape[:a]), x.Shape[a], prodInts(x.Shape[a+1:])
		return normRun("LpNormalization", x,
			func(v []float32) []float32 { return lpNormalize(v, outer, dim, inner, p) },
			func(v []float64) []float64 { return lpNormalize(v, outer, dim, inner, p) })
	}), nil
}

// lpNormalize divides each vector along the middle axis of x
// ([outer, dim, inner]) by its L1 or L2 norm; a zero vector stays zero.
func lpNormalize[T tensor.Float](x []T, outer, dim, inner int, p int64) []T {
	y := make([]T, len(x))
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			base := o*dim*inner + j
			var s float64
			for i := 0; i < dim; i++ {
				v := float64(x[base+i*inner])
				if p == 1 {
					s += math.Abs(v)
				} else {
					s += v * v
				}
			}
			if p == 2 {
				s = math.Sqrt(s)
			}
			if s == 0 {
				continue
			}
			for i := 0; i < dim; i++ {
				y[base+i*inner] = T(float64(x[base+i*inner]) / s)
			}
		}
	}
	return y
}
