package model

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.FusedConv is a Conv with a constant float32 weight and what
// the rewrites of rewrite_conv.go found after it, in one node:
//
//	Y = act(conv(X, W·s) + (B·s + t) + R)
//
// where s and t fold an inference BatchNormalization (s = scale/√(var+ε),
// t = bias − mean·s) into the weights at load, R is an optional residual
// added as each tile of the product is written, and act an optional
// activation applied then. The inputs are X, W, B, the BatchNormalization's
// scale, bias, mean and var, and R (absent ones empty).
//
// X, Y and R are NCHW unless nhwc_in / nhwc_out / nhwc_residual say
// channels-last ([N, spatial..., C]; R is NHWC when Y is); only fused
// convolutions ever see a channels-last value. Such values, and values
// only fused convolutions read (pooled_out), are buffers of a pool, and
// the last fused convolution
// to read one (recycle_inputs names its input positions) returns it to the
// pool: the next image's convolutions write into memory that is already
// mapped and in cache, and allocate nothing. The node is not folded at
// load (a constant input is no reason to keep a pool buffer forever).
//
// Its results equal the unfused graph's to within float32 rounding of the
// folded weights: bias, residual and activation are the same float32
// operations in the same order as the nodes they replace.

func init() {
	register(Descriptor{Domain: rewriteDomain, Type: fusedConvType, Since: 1}, buildFusedConv)
}

// FusedConvAttrs are FusedConv's attributes: Conv's, the folded
// BatchNormalization's epsilon, the activation and its parameters, the
// layouts, the names of the nodes fused (for errors and metadata) and the
// inputs this node is the last reader of.
type FusedConvAttrs struct {
	ConvAttrs
	Epsilon          float32   `onnx:"epsilon" default:"1e-05"`
	Activation       string    `onnx:"activation"`
	ActivationParams []float32 `onnx:"activation_params"`
	Fused            []string  `onnx:"fused"`
	NHWCIn           bool      `onnx:"nhwc_in"`
	NHWCOut          bool      `onnx:"nhwc_out"`
	NHWCResidual     bool      `onnx:"nhwc_residual"`
	PooledOut        bool      `onnx:"pooled_out"`
	RecycleInputs    []int64   `onnx:"recycle_inputs"`
}

// convActKind is an activation a convolution's output stage applies.
type convActKind uint8

const (
	convActNone convActKind = iota
	convActRelu
	convActLeakyRelu      // p[0] alpha
	convActClip           // p[0] min, p[1] max
	convActHardSigmoid    // p[0] alpha, p[1] beta
	convActHardSwish      // x·HardSigmoid(x) with alpha 1/6, beta 1/2
	convActHardSwishParts // (x·Clip(x + p[0], p[1], p[2])) / p[3] (· p[3] when p[4] is 0)
)

// convAct is an activation with its parameters.
type convAct struct {
	kind convActKind
	p    [5]float32
}

func parseConvAct(name string, params []float32) (convAct, error) {
	kinds := map[string]struct {
		kind convActKind
		n    int
	}{
		"": {convActNone, 0}, "Relu": {convActRelu, 0}, "LeakyRelu": {convActLeakyRelu, 1}, "Clip": {convActClip, 2},
		"HardSigmoid": {convActHardSigmoid, 2}, "HardSwish": {convActHardSwish, 0}, "HardSwishParts": {convActHardSwishParts, 5},
	}
	k, ok := kinds[name]
	if !ok {
		return convAct{}, fmt.Errorf("activation %q is not one FusedConv applies", name)
	}
	if len(params) != k.n {
		return convAct{}, fmt.Errorf("activation %s takes %d parameters, got %d", name, k.n, len(params))
	}
	a := convAct{kind: k.kind}
	copy(a.p[:], params)
	return a, nil
}

// clamp returns the bounds Relu and Clip clamp to (±Inf for the other
// activations) and whether apply has work left after clamping.
func (a *convAct) clamp() (lo, hi float32, rest bool) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	switch a.kind {
	case convActNone:
	case convActRelu:
		lo = 0
	case convActClip:
		lo, hi = a.p[0], a.p[1]
	default:
		rest = true
	}
	return lo, hi, rest
}

// apply computes v = act(v) in place, each activation as its operator
// computes it in float32, but for Relu and Clip, which clamp as
// kernels.ConvFinish does, and the HardSigmoid family, which clamps as
// kernels.ConvHard does (each keeps a negative zero and NaN where Go's max
// and min would give +0 and NaN: equal values all the same); those run on
// tb's kernels.
func (a *convAct) apply(v []float32, tb *dispatch.Table) {
	hard := tb.ConvHard
	switch a.kind {
	case convActRelu, convActClip:
		lo, hi, _ := a.clamp()
		tb.ConvFinish(v, nil, nil, lo, hi)
	case convActLeakyRelu:
		alpha := a.p[0]
		for i, x := range v {
			if x < 0 {
				x *= alpha
			}
			v[i] = x
		}
	case convActHardSigmoid:
		hard(v, a.p[0], a.p[1], 0, 1, 1, kernels.HardT)
	case convActHardSwish:
		hard(v, 1.0/6, 0.5, 0, 1, 1, kernels.HardXT)
	case convActHardSwishParts:
		c, lo, hi, d := a.p[0], a.p[1], a.p[2], a.p[3]
		if a.p[4] != 0 {
			hard(v, 1, c, lo, hi, d, kernels.HardXTDiv)
		} else {
			hard(v, 1, c, lo, hi, d, kernels.HardXTMul)
		}
	}
}

// convOutput finishes a convolution's product: y = act(product + bias +
// res), with x, y and res laid out as it says.
type convOutput struct {
	bias                     []float32 // nil or M values
	res                      []float32 // nil, or a residual of y's size
	act                      convAct
	nhwcIn, nhwcOut, nhwcRes bool            // the layouts of x, y and res
	pooled                   bool            // y in a pooled buffer (always when nhwcOut)
	xscale                   []float32       // nil, or x's scale per image and channel (x NCHW)
	biasRep                  []float32       // nil, or bias repeated for a tile's rows (tileBias)
	tb                       *dispatch.Table // the kernels that finish: the engine's
}

// tileBias returns the bias that finishes n rows of a one-group product
// in one pass (n adjacent rows of M channels): the bias repeated n times,
// or nil without one. ok is false when the rows must be finished one by
// one.
func (o *convOutput) tileBias(g *ConvGeometry, n int) (rep []float32, ok bool) {
	switch {
	case g.Group != 1:
		return nil, false
	case o.bias == nil:
		return nil, true
	case len(o.biasRep) < n*g.M:
		return nil, false
	}
	return o.biasRep[:n*g.M], true
}

// convBiasRep returns bias repeated rows times.
func convBiasRep(bias []float32, rows int) []float32 {
	if bias == nil {
		return nil
	}
	rep := make([]float32, 0, rows*len(bias))
	for range rows {
		rep = append(rep, bias...)
	}
	return rep
}

// finish finishes values dst of the product in place: bias and res are
// nil or as long as dst.
func (o *convOutput) finish(dst, bias, res []float32) {
	lo, hi, rest := o.act.clamp()
	o.tb.ConvFinish(dst, bias, res, lo, hi)
	if rest {
		o.act.apply(dst, o.tb)
	}
}

// finishAll finishes all of y, a product of zero (no input channels).
func (o *convOutput) finishAll(g *ConvGeometry, y []float32) {
	outSize := g.OutSize()
	for b := 0; b < g.Batch; b++ {
		for i := 0; i < outSize; i++ {
			for m := 0; m < g.M; m++ {
				at := (b*g.M+m)*outSize + i
				if o.nhwcOut {
					at = (b*outSize+i)*g.M + m
				}
				v := y[at]
				if o.bias != nil {
					v += o.bias[m]
				}
				if o.res != nil {
					r := (b*g.M+m)*outSize + i
					if o.nhwcRes {
						r = (b*outSize+i)*g.M + m
					}
					v += o.res[r]
				}
				y[at] = v
			}
		}
	}
	o.act.apply(y, o.tb)
}

// fusedConvWeights folds an inference BatchNormalization (scale, bias,
// mean, var; nil when absent) into a convolution's weight w (M×...) and
// bias b (nil or M values): W'[m] = W[m]·s[m], B'[m] = B[m]·s[m] + t[m].
func fusedConvWeights(w, b *tensor.Tensor, bn []*tensor.Tensor, eps float32) (*tensor.Tensor, []float32, error) {
	m := w.Shape[0]
	if b != nil {
		if b.Rank() != 1 || b.Shape[0] != m {
			return nil, nil, fmt.Errorf("Conv bias %s does not fit weight %s", tensor.ShapeString(b.Shape), tensor.ShapeString(w.Shape))
		}
	}
	var bias []float32
	if b != nil {
		bias = slices.Clone(b.Data.([]float32))
	}
	if bn[0] == nil {
		return w, bias, nil
	}
	p, err := bnParams(bn)
	if err != nil {
		return nil, nil, err
	}
	if len(p[0]) != m {
		return nil, nil, fmt.Errorf("BatchNormalization has %d channels, the Conv before it %d", len(p[0]), m)
	}
	f := newBatchNormFold(p[0], p[1], p[2], p[3], float64(eps))
	src := w.Data.([]float32)
	per := len(src) / max(m, 1)
	folded := make([]float32, len(src))
	for c := 0; c < m; c++ {
		for i, v := range src[c*per : (c+1)*per] {
			folded[c*per+i] = float32(float64(v) * f.Scale[c])
		}
	}
	out := make([]float32, m)
	for c := range out {
		var bv float64
		if bias != nil {
			bv = float64(bias[c])
		}
		out[c] = float32(bv*f.Scale[c] + f.Shift[c])
	}
	return tensor.From(slices.Clone(w.Shape), folded), out, nil
}

func buildFusedConv(n *node, at *FusedConvAttrs) (opFunc, error) {
	if err := n.checkArity(2, fusedInputs, 1, 1); err != nil {
		return nil, err
	}
	ca := &at.ConvAttrs
	if err := checkConvAttrs(ca.AutoPad, ca.Group, ca.KernelShape, ca.Strides, ca.Dilations, ca.Pads); err != nil {
		return nil, err
	}
	act, err := parseConvAct(at.Activation, at.ActivationParams)
	if err != nil {
		return nil, err
	}
	in := func(i int) *tensor.Tensor {
		if i < len(n.consts) {
			return n.consts[i]
		}
		return nil
	}
	has := func(i int) bool { return i < len(n.pb.Inputs) && n.pb.Inputs[i] != "" }
	w := in(fusedW)
	if w == nil || w.DType != tensor.Float32 || w.Rank() < 3 {
		return nil, fmt.Errorf("FusedConv needs a constant float32 weight of rank 3 or more")
	}
	if _, err := convShapes("Conv", append([]int{0, 0}, w.Shape[2:]...), w.Shape, ca.KernelShape); err != nil {
		return nil, err
	}
	var b *tensor.Tensor
	if has(fusedB) {
		if b = in(fusedB); b == nil || b.DType != tensor.Float32 {
			return nil, fmt.Errorf("FusedConv needs a constant float32 bias")
		}
	}
	bn := make([]*tensor.Tensor, 4)
	if has(fusedBNScale) {
		for i := range bn {
			if bn[i] = in(fusedBNScale + i); bn[i] == nil || bn[i].DType != tensor.Float32 {
				return nil, fmt.Errorf("FusedConv needs constant float32 BatchNormalization parameters")
			}
		}
	}
	w, bias, err := fusedConvWeights(w, b, bn, at.Epsilon)
	if err != nil {
		return nil, err
	}
	group := int(ca.Group)
	held, err := holdConvWeight(n, "Conv", w, group, false) // listed as the Conv it replaced
	if err != nil {
		return nil, err
	}
	for i := fusedB; i < fusedResidual && i < len(n.unused); i++ {
		n.unused[i] = true // folded into the held weight and bias
	}
	n.unused[fusedW] = true
	ca.held = held
	recycle := make([]int, 0, 3)
	var names []string
	for _, i := range at.RecycleInputs {
		if p := int(i); slices.Contains(fusedReadPositions, p) && p < len(n.pb.Inputs) && n.pb.Inputs[p] != "" && !slices.Contains(names, n.pb.Inputs[p]) {
			recycle, names = append(recycle, p), append(names, n.pb.Inputs[p])
		}
	}
	exec := n.opts.Exec
	var biasRep []float32
	if held != nil && held.w != nil && group == 1 {
		biasRep = convBiasRep(bias, convTileRows(max(held.w.k, held.w.n)))
	}
	layouts := convOutput{biasRep: biasRep, nhwcIn: at.NHWCIn, nhwcOut: at.NHWCOut, nhwcRes: at.NHWCResidual, pooled: at.PooledOut || at.NHWCOut}
	n.runCtx = func(ctx context.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[fusedX]
		var res *tensor.Tensor
		if len(in) > fusedResidual {
			res = in[fusedResidual]
		}
		var xs *tensor.Tensor
		if len(in) > fusedXScale {
			xs = in[fusedXScale]
		}
		y, err := runFusedConv(exec, ca, held, w, bias, act, x, xs, res, layouts)
		if err != nil {
			return nil, err
		}
		if valuesKept(ctx) {
			return []*tensor.Tensor{y}, nil // a trace holds every value
		}
		for _, i := range recycle {
			if t := in[i]; t != nil && t != y {
				if d, ok := t.Data.([]float32); ok {
					putConvBuf(d)
				}
			}
		}
		return []*tensor.Tensor{y}, nil
	}
	return nil, nil
}

// runFusedConv runs a FusedConv on x times xs and with residual res (each
// nil when absent), in the layouts lay gives.
func runFusedConv(e *gemm.Engine, ca *ConvAttrs, held *convHeld, w *tensor.Tensor, bias []float32, act convAct, x, xs, res *tensor.Tensor, lay convOutput) (*tensor.Tensor, error) {
	var xscale []float32
	if xs != nil {
		if x.DType != tensor.Float32 || xs.DType != tensor.Float32 {
			return nil, inputErrorf("Mul operands have types %v and %v", x.DType, xs.DType)
		}
		img, scale := x, xs
		if !convChannelScale(scale, img) {
			img, scale = xs, x
		}
		if !lay.nhwcIn && held != nil && held.w != nil && convChannelScale(scale, img) {
			x, xscale = img, convExpandScale(scale, img.Shape)
		} else { // as Mul does
			var err error
			if x, err = arith.MulTensors(x, xs); err != nil {
				return nil, err
			}
		}
	}
	if x.DType != tensor.Float32 {
		return nil, inputErrorf("Conv input is %v, its weight float32", x.DType)
	}
	shape := x.Shape
	if lay.nhwcIn {
		shape = convNCHWShape(x.Shape)
	}
	g, err := ca.Geometry(shape, w.Shape)
	if err != nil {
		return nil, err
	}
	outShape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(outShape)
	o := &convOutput{bias: bias, act: act, nhwcIn: lay.nhwcIn, nhwcOut: lay.nhwcOut, nhwcRes: lay.nhwcRes, pooled: lay.pooled, xscale: xscale, biasRep: lay.biasRep, tb: e.Table()}
	var late *tensor.Tensor // a residual of another shape (broadcast): added after
	if res != nil {
		if res.DType != tensor.Float32 {
			return nil, inputErrorf("Add operands have types %v and %v", tensor.Float32, res.DType)
		}
		want := outShape
		if o.nhwcRes {
			want = convNHWCShape(outShape)
		}
		switch {
		case !equalShape(res.Shape, want):
			late, o.act = res, convAct{}
			if o.nhwcRes {
				late = convToNCHW(res)
			}
		case o.nhwcOut && !o.nhwcRes: // not a layout the rewrites choose
			o.res, o.nhwcRes = make([]float32, size), true
			convNHWCInto(o.res, res.Data.([]float32), g.Batch, g.M, g.OutSize())
		default:
			o.res = res.Data.([]float32)
		}
	}
	if o.nhwcOut {
		outShape = convNHWCShape(outShape)
	}
	var y []float32
	if o.pooled {
		y = getConvBuf(size)
	} else {
		y = make([]float32, size)
	}
	xv := x.Data.([]float32)
	switch {
	case held != nil && held.dw != nil && !o.nhwcIn && !o.nhwcOut && (o.res == nil || !o.nhwcRes):
		err = held.dw.forwardTo(e, g, xv, y, o)
	case held != nil && held.w != nil:
		err = held.w.forwardTo(e, g, xv, y, o)
	default:
		// An empty weight, or a layout the held weight does not run:
		// through NCHW and the plain convolution.
		xn := x
		if o.nhwcIn {
			xn = convToNCHW(x)
		}
		var yn *tensor.Tensor
		if yn, err = runConv(e, ca, held, xn, w, biasTensor(bias)); err == nil {
			yv := yn.Data.([]float32)
			rv := o.res
			if rv != nil && o.nhwcRes {
				rv = convToNCHW(&tensor.Tensor{DType: tensor.Float32, Shape: convNHWCShape(yn.Shape), Data: rv}).Data.([]float32)
			}
			o.finish(yv, nil, rv)
			if o.nhwcOut {
				convNHWCInto(y, yv, g.Batch, g.M, g.OutSize())
			} else {
				copy(y, yv)
			}
		}
	}
	if err != nil {
		if o.pooled {
			putConvBuf(y)
		}
		return nil, err
	}
	out := &tensor.Tensor{DType: tensor.Float32, Shape: outShape, Data: y}
	if late == nil {
		return out, nil
	}
	// Broadcast as Add does, in NCHW.
	if o.nhwcOut {
		out = convToNCHW(out)
	}
	if o.pooled {
		defer putConvBuf(y)
	}
	sum, err := arith.AddTensors(out, late)
	if err != nil {
		return nil, err
	}
	sv := sum.Data.([]float32)
	act.apply(sv, o.tb)
	if !o.nhwcOut || sum.Rank() < 3 {
		return sum, nil // a fresh buffer: recycling it is harmless
	}
	n, c := sum.Shape[0], sum.Shape[1]
	nhwc := getConvBuf(len(sv))
	convNHWCInto(nhwc, sv, n, c, len(sv)/max(n*c, 1))
	return &tensor.Tensor{DType: tensor.Float32, Shape: convNHWCShape(sum.Shape), Data: nhwc}, nil
}

// convChannelScale reports whether s scales the channels of image x
// (NCHW): s broadcasts to x without changing x's shape, and is 1 along
// every spatial axis.
func convChannelScale(s, x *tensor.Tensor) bool {
	if x.Rank() < 3 || s.Rank() > x.Rank() {
		return false
	}
	off := x.Rank() - s.Rank()
	for i, d := range s.Shape {
		switch ax := i + off; {
		case d == 1:
		case ax < 2 && d == x.Shape[ax]:
		default:
			return false
		}
	}
	return true
}

// convExpandScale returns channel scale s (convChannelScale) of an image
// of shape xs as xs[0]×xs[1] values.
func convExpandScale(s *tensor.Tensor, xs []int) []float32 {
	n, c := xs[0], xs[1]
	off := len(xs) - s.Rank() // s's axis j is the image's axis j+off
	dn, dc := 1, 1
	if off <= 0 {
		dn = s.Shape[-off]
	}
	if off <= 1 {
		dc = s.Shape[1-off]
	}
	// Every other axis of s is 1: value (i, j) is at i·dc + j.
	sv := s.Data.([]float32)
	out := make([]float32, n*c)
	for i := 0; i < n; i++ {
		for j := 0; j < c; j++ {
			out[i*c+j] = sv[i%dn*dc+j%dc]
		}
	}
	return out
}

func biasTensor(b []float32) *tensor.Tensor {
	if b == nil {
		return nil
	}
	return tensor.From([]int{len(b)}, b)
}

// convNCHWShape and convNHWCShape move the channel axis.
func convNCHWShape(s []int) []int {
	if len(s) < 2 {
		return slices.Clone(s)
	}
	out := []int{s[0], s[len(s)-1]}
	return append(out, s[1:len(s)-1]...)
}

func convNHWCShape(s []int) []int {
	if len(s) < 2 {
		return slices.Clone(s)
	}
	out := append([]int{s[0]}, s[2:]...)
	return append(out, s[1])
}

// convToNCHW returns a channels-last tensor in NCHW.
func convToNCHW(t *tensor.Tensor) *tensor.Tensor {
	shape := convNCHWShape(t.Shape)
	src := t.Data.([]float32)
	dst := make([]float32, len(src))
	if len(shape) >= 2 && len(src) > 0 {
		n, c := shape[0], shape[1]
		size := len(src) / max(n*c, 1)
		for b := 0; b < n; b++ {
			kernels.TransposeCols(dst[b*c*size:], src[b*c*size:(b+1)*c*size], size, c, 0, 0, c)
		}
	}
	return &tensor.Tensor{DType: t.DType, Shape: shape, Data: dst}
}

// convNHWCInto writes NCHW values src (batch×c×size) channels-last into dst.
func convNHWCInto(dst, src []float32, batch, c, size int) {
	for b := 0; b < batch; b++ {
		kernels.TransposeCols(dst[b*c*size:], src[b*c*size:(b+1)*c*size], c, size, 0, 0, size)
	}
}

// Channels-last values are recycled through pools by size class: sizes
// above 1,024 round up to one of eight steps per power of two (at most
// 12.5% more than asked), so few classes serve every shape and batch.
var convBufPools [64 * 8]sync.Pool

// convBufClass returns the class of a buffer of n values and its size.
func convBufClass(n int) (int, int) {
	if n <= 1024 {
		return 0, 1024
	}
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e
	step := 1 << (e - 3)
	sub := (n + step - 1) / step // 5..8
	return e*8 + sub - 1, sub * step
}

// getConvBuf returns n values of undefined content.
func getConvBuf(n int) []float32 {
	class, size := convBufClass(n)
	if class >= len(convBufPools) {
		return make([]float32, n)
	}
	if v := convBufPools[class].Get(); v != nil {
		return (*(v.(*[]float32)))[:n]
	}
	return make([]float32, n, size)
}

// putConvBuf recycles a buffer getConvBuf returned.
func putConvBuf(b []float32) {
	class, size := convBufClass(cap(b))
	if class >= len(convBufPools) || size != cap(b) {
		return // not one of ours
	}
	b = b[:cap(b)]
	convBufPools[class].Put(&b)
}
