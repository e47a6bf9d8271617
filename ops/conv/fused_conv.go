package conv

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/arith"
	"github.com/quantserve/quantserve/ops/norm"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// quantserve.FusedConv is a Conv with a constant float32 weight and what
// the graph compiler's convolution rewrites found after it, in one node:
//
//	Y = qdq(bound(act(conv(X, W·s) + (B·s + t) + R)))
//
// where s and t fold an inference BatchNormalization (s = scale/√(var+ε),
// t = bias − mean·s) into the weights at load, R is an optional residual
// added as each tile of the product is written, act an optional
// activation applied then, and bound an optional Max(·, c) or Min(·, c)
// with a constant c (bound "Max" or "Min", bound_value c), with the Max
// and Min operators' bits, and qdq an optional per-tensor QuantizeLinear
// -> DequantizeLinear pair through uint8 or int8 (qdq_type), with
// qdq_scales [quantize, dequantize] and qdq_zero_points likewise, with
// quantserve.QuantizeDequantize's bits (quant.FakeQuant). Activation
// HardSwishQDQ is HardSwish as exporters spell it out with a static QDQ
// file's pairs between its steps: activation_params [c, d, 1 for a Div
// by d or 0 for a Mul], activation_qdq_scales and _zero_points three
// pairs (after the convolution, the Add of c, the Mul), of
// activation_qdq_type. residual_qdq_scales, _zero_points and _type are
// a pair applied before R is added (a static QDQ file's pair after the
// convolution, whose output the residual Add reads):
//
//	Y = qdq(bound(act(rqdq(conv(X, W·s) + (B·s + t)) + R)))
//
// with quantserve.QuantizeDequantize's bits too. The inputs are X, W, B, the BatchNormalization's
// scale, bias, mean and var, R, and a channel scale of X (absent ones
// empty), at the positions FusedX ... FusedXScale.
//
// grid_scale, grid_zero_point and grid_type say that X (after the input
// pair, when there is one) lies on the grid of a QuantizeLinear ->
// DequantizeLinear pair through grid_type ("uint8" or "int8") with that
// dequantize scale and zero point: every value is float32(q − zp)·scale
// for an integer q of the type, as the pair (a static QDQ file's, whose
// DequantizeLinear the convolution reads) makes them. An int8 product
// then takes the pair's bytes themselves as its activations
// (gemm.GridActivations), as ONNX's QLinearConv does, where it would
// quantize them again per row.
//
// X, Y and R are NCHW unless nhwc_in / nhwc_out / nhwc_residual say
// channels-last ([N, spatial..., C]; R is NHWC when Y is); only fused
// convolutions and the channels-last pools (quantserve's
// GlobalAveragePool, GlobalMaxPool and MaxPool) ever see a channels-last
// value. A channels-last X with a channel scale is scaled pixel by pixel,
// with no transpose. Values only fused convolutions (and global pools
// before them) read, in either layout (pooled_out), are buffers of a pool, and
// the last fused convolution to read one (recycle_inputs names its input
// positions) returns it to the pool, or writes its output over it (an
// int8 product's residual, output.writesOverResidual): the next image's
// convolutions write into memory that is already mapped and in cache,
// and allocate nothing.
// The node is not folded at load (a constant input is no reason to keep
// a pool buffer forever).
//
// Its results equal the unfused graph's to within float32 rounding of the
// folded weights: bias, residual and activation are the same float32
// operations in the same order as the nodes they replace.
var FusedConv = ops.Op{ops.Register(ops.Descriptor{Domain: ops.RewriteDomain, Type: FusedConvType, Since: 1}, buildFusedConv)}

// FusedConvType is the op type of the fused convolution (in
// ops.RewriteDomain).
const FusedConvType = "FusedConv"

// FusedConv's input positions; FusedInputs is their number.
const (
	FusedX = iota
	FusedW
	FusedB
	FusedBNScale
	FusedBNBias
	FusedBNMean
	FusedBNVar
	FusedResidual
	FusedXScale
	FusedInputs
)

// recyclable are the inputs of a fused convolution that may be pooled
// values it recycles: those recycle_inputs may name.
var recyclable = []int{FusedX, FusedResidual, FusedXScale}

// FusedConvAttrs are FusedConv's attributes: Conv's, the folded
// BatchNormalization's epsilon, the activation and its parameters, the
// Max or Min folded after it and its constant, the QuantizeLinear ->
// DequantizeLinear pair folded after that, the layouts, the names of
// the nodes fused (for errors and metadata) and the inputs this node is
// the last reader of.
type FusedConvAttrs struct {
	ConvAttrs
	Epsilon          float32   `onnx:"epsilon" default:"1e-05"`
	Activation       string    `onnx:"activation"`
	ActivationParams []float32 `onnx:"activation_params"`
	Bound            string    `onnx:"bound"`
	BoundValue       float32   `onnx:"bound_value"`
	QDQScales        []float32 `onnx:"qdq_scales"`
	QDQZeroPoints    []int64   `onnx:"qdq_zero_points"`
	QDQType          string    `onnx:"qdq_type"`
	ActQDQScales     []float32 `onnx:"activation_qdq_scales"`
	ActQDQZeroPoints []int64   `onnx:"activation_qdq_zero_points"`
	ActQDQType       string    `onnx:"activation_qdq_type"`
	ResQDQScales     []float32 `onnx:"residual_qdq_scales"`
	ResQDQZeroPoints []int64   `onnx:"residual_qdq_zero_points"`
	ResQDQType       string    `onnx:"residual_qdq_type"`
	InQDQScales      []float32 `onnx:"input_qdq_scales"`
	InQDQZeroPoints  []int64   `onnx:"input_qdq_zero_points"`
	InQDQType        string    `onnx:"input_qdq_type"`
	GridScale        []float32 `onnx:"grid_scale"`
	GridZeroPoint    []int64   `onnx:"grid_zero_point"`
	GridType         string    `onnx:"grid_type"`
	Fused            []string  `onnx:"fused"`
	NHWCIn           bool      `onnx:"nhwc_in"`
	NHWCOut          bool      `onnx:"nhwc_out"`
	NHWCResidual     bool      `onnx:"nhwc_residual"`
	PooledOut        bool      `onnx:"pooled_out"`
	RecycleInputs    []int64   `onnx:"recycle_inputs"`
}

// fusedConv is a compiled FusedConv: the folded weight (held by the
// kernels, or in w when it is empty and the kernels hold nothing) and
// bias, the activation, the layouts, and the inputs it recycles.
type fusedConv struct {
	at      *ConvAttrs
	held    *held
	w       *tensor.Tensor // the folded weight when held is nil
	wShape  []int          // the folded weight's shape
	bias    []float32
	act     activation
	layouts output
	recycle []int
	// inPair is the QDQ pair applied to the input (times its channel
	// scale, when there is one) before the product, or nil.
	inPair *quant.FakeQuant
	// kept is the geometry of the last input shape the node ran on, with
	// its taps: a model's node sees one shape run after run.
	kept atomic.Pointer[keptGeometry]
	// dwt is the weight of a depthwise convolution of one output channel
	// per input channel tap-major (nhwcWeights), for the channels-last
	// path (nil for any other weight); dwKept is that path's plan for the
	// last geometry it ran on.
	dwt    []float32
	dwKept atomic.Pointer[dwPlan]
}

// dwPlan returns the channels-last depthwise plan of geometry g on a
// table of DepthwiseAlign align (one the node keeps, made by geometry).
func (f *fusedConv) dwPlan(g *Geometry, align int) *dwPlan {
	if pl := f.dwKept.Load(); pl != nil && pl.g == g && pl.align == align {
		return pl
	}
	pl := newDWPlan(g, f.layouts.nhwcIn, f.dwt, align)
	f.dwKept.Store(pl)
	return pl
}

// keptGeometry is a geometry with the input shape it was made for.
type keptGeometry struct {
	shape []int
	g     *Geometry
}

// geometry returns the geometry of input shape x: the kept one when x
// is the shape it was made for.
func (f *fusedConv) geometry(x []int) (*Geometry, error) {
	if k := f.kept.Load(); k != nil && slices.Equal(k.shape, x) {
		return k.g, nil
	}
	shape := slices.Clone(x) // the geometry keeps slices of it; x is the caller's
	g, err := f.at.Geometry(shape, f.wShape)
	if err != nil {
		return nil, err
	}
	g.taps = newTaps(g)
	f.kept.Store(&keptGeometry{shape: shape, g: g})
	return g, nil
}

// foldBatchNorm folds an inference BatchNormalization (scale, bias, mean,
// var; nil when absent) into a convolution's weight w (M×...) and bias b
// (nil or M values): W'[m] = W[m]·s[m], B'[m] = B[m]·s[m] + t[m].
func foldBatchNorm(w, b *tensor.Tensor, bn []*tensor.Tensor, eps float32) (*tensor.Tensor, []float32, error) {
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
	p, err := norm.BatchNormParams(bn)
	if err != nil {
		return nil, nil, err
	}
	if len(p[0]) != m {
		return nil, nil, fmt.Errorf("BatchNormalization has %d channels, the Conv before it %d", len(p[0]), m)
	}
	f := norm.NewBatchNormFold(p[0], p[1], p[2], p[3], float64(eps))
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

func buildFusedConv(n *ops.Node, at *FusedConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, FusedInputs, 1, 1); err != nil {
		return nil, err
	}
	ca := &at.ConvAttrs
	if err := checkAttrs(ca.AutoPad, ca.Group, ca.KernelShape, ca.Strides, ca.Dilations, ca.Pads); err != nil {
		return nil, err
	}
	act, err := parseActivation(at.Activation, at.ActivationParams)
	if err != nil {
		return nil, err
	}
	if act, err = act.withBound(at.Bound, at.BoundValue); err != nil {
		return nil, err
	}
	if act, err = act.withHardSwishQDQ(at.ActQDQScales, at.ActQDQZeroPoints, at.ActQDQType); err != nil {
		return nil, err
	}
	if act, err = act.withQDQ(at.QDQScales, at.QDQZeroPoints, at.QDQType); err != nil {
		return nil, err
	}
	act = act.tabulate()
	has := func(i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }
	if act, err = act.withResidualQDQ(at.ResQDQScales, at.ResQDQZeroPoints, at.ResQDQType, has(FusedResidual)); err != nil {
		return nil, err
	}
	w := n.Const(FusedW)
	if w == nil || w.DType != tensor.Float32 || w.Rank() < 3 {
		return nil, fmt.Errorf("FusedConv needs a constant float32 weight of rank 3 or more")
	}
	if err := checkHeldShape("Conv", w.Shape, ca.KernelShape); err != nil {
		return nil, err
	}
	var b *tensor.Tensor
	if has(FusedB) {
		if b = n.Const(FusedB); b == nil || b.DType != tensor.Float32 {
			return nil, fmt.Errorf("FusedConv needs a constant float32 bias")
		}
	}
	bn := make([]*tensor.Tensor, 4)
	if has(FusedBNScale) {
		for i := range bn {
			if bn[i] = n.Const(FusedBNScale + i); bn[i] == nil || bn[i].DType != tensor.Float32 {
				return nil, fmt.Errorf("FusedConv needs constant float32 BatchNormalization parameters")
			}
		}
	}
	w, bias, err := foldBatchNorm(w, b, bn, at.Epsilon)
	if err != nil {
		return nil, err
	}
	group := int(ca.Group)
	grid, err := gridOf(at.GridScale, at.GridZeroPoint, at.GridType)
	if err != nil {
		return nil, err
	}
	h, l, err := holdWeight(n, w, group, false, grid)
	if err != nil {
		return nil, err
	}
	if h != nil { // listed as the Conv it replaced
		n.Part("Conv", n.Opset, nil, nil).AddLayer(l.k, l.cols, l.kernels)
	}
	// The weight, bias and BatchNormalization are folded into w and bias.
	n.HoldInputs(FusedW, FusedB, FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar)
	f := &fusedConv{at: ca, held: h, wShape: w.Shape, bias: bias, act: act}
	if len(at.InQDQScales) > 0 || len(at.InQDQZeroPoints) > 0 || at.InQDQType != "" {
		if f.inPair, err = newFakeQuant(at.InQDQScales, at.InQDQZeroPoints, at.InQDQType); err != nil {
			return nil, fmt.Errorf("FusedConv input pair: %w", err)
		}
	}
	if h == nil {
		f.w = w // the kernels hold none of it: each run reads it
	}
	if h != nil && h.dw != nil && w.Shape[0] == group && w.Shape[1] == 1 {
		f.dwt = nhwcWeights(h.dw.w, group, ops.ProdInts(w.Shape[2:]))
	}
	var names []string
	for _, i := range at.RecycleInputs {
		if p := int(i); slices.Contains(recyclable, p) && p < len(n.Inputs) && n.Inputs[p] != "" && !slices.Contains(names, n.Inputs[p]) {
			f.recycle, names = append(f.recycle, p), append(names, n.Inputs[p])
		}
	}
	var biasRep []float32
	if h != nil && h.w != nil && group == 1 {
		biasRep = repeatBias(bias, tileRows(max(h.w.k, h.w.n)))
	}
	f.layouts = output{biasRep: biasRep, nhwcIn: at.NHWCIn, nhwcOut: at.NHWCOut, nhwcRes: at.NHWCResidual, pooled: at.PooledOut}
	return f, nil
}

func (f *fusedConv) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[FusedX]
	// The last reader of a channels-last image it scales may scale it in
	// place: nothing reads it after this node (a trace keeps it).
	own := f.layouts.nhwcIn && !c.KeepValues() && slices.Contains(f.recycle, FusedX) &&
		!shares(x, input(in, FusedResidual)) && !shares(x, input(in, FusedXScale))
	res := input(in, FusedResidual)
	// Its residual's last reader may write its output over it.
	ownRes := res != nil && !c.KeepValues() && slices.Contains(f.recycle, FusedResidual) &&
		!shares(res, x) && !shares(res, input(in, FusedXScale))
	outs, err := f.run(c, x, input(in, FusedXScale), res, own, ownRes)
	if err != nil || c.KeepValues() { // a trace holds every value
		return outs, err
	}
	y, _ := outs[0].Data.([]float32)
	for _, i := range f.recycle {
		if t := in[i]; t != nil && t != outs[0] {
			if d, ok := t.Data.([]float32); ok && !sameBuffer(d, y) {
				putBuf(d)
			}
		}
	}
	return outs, nil
}

// sameBuffer reports whether a and b start at the same value.
func sameBuffer(a, b []float32) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// shares reports whether float32 values a and b (b may be nil) are the
// same value or start at the same buffer.
func shares(a, b *tensor.Tensor) bool {
	if a == b {
		return true
	}
	if b == nil {
		return false
	}
	av, _ := a.Data.([]float32)
	bv, _ := b.Data.([]float32)
	return sameBuffer(av, bv)
}

// outputs recycles the output stages of runs: a small model's
// convolutions run by the thousand a second, and a stage (its operands'
// slices, some hundred bytes of pointers) allocated each time made the
// collector run, and every store of a pointer pay its write barrier,
// while the step mostly waited for it.
var outputs = sync.Pool{New: func() any { return new(output) }}

// releaseOutput drops o's operands, which the run's output outlives, and
// recycles it.
func releaseOutput(o *output) {
	*o = output{}
	outputs.Put(o)
}

// run runs the fused convolution on x times xs and with residual res
// (each nil when absent), in the node's layouts; own says x, when
// channels-last, may be scaled in place, and ownRes that res is a pooled
// buffer nothing reads after this node, which may become its output.
func (f *fusedConv) run(c *ops.Context, x, xs, res *tensor.Tensor, own, ownRes bool) ([]*tensor.Tensor, error) {
	held, w, bias, act, lay := f.held, f.w, f.bias, f.act, &f.layouts
	var xscale []float32
	var shapes [2][8]int // the image's and the output's shapes, most often
	shape := x.Shape     // the image's, NCHW
	if lay.nhwcIn {
		shape = nchwShapeTo(shapes[0][:0], x.Shape)
	}
	if f.inPair != nil {
		paired, tmp, err := f.pairInput(c, x, xs, own)
		if err != nil {
			return nil, err
		}
		if tmp {
			defer putBuf(paired.Data.([]float32))
		}
		x, xs = paired, nil
	}
	if xs != nil && lay.nhwcIn {
		if x.DType != tensor.Float32 || xs.DType != tensor.Float32 {
			return nil, ops.InputErrorf("Mul operands have types %v and %v", x.DType, xs.DType)
		}
		if f.scalesRows(shape, xs) {
			// A pointwise product reads the image's pixels as its rows:
			// each tile scales its own rows as it reads them.
			xscale = expandScale(xs, shape)
		} else {
			scaled, tmp, err := scaleNHWC(c, x, xs, own)
			if err != nil {
				return nil, err
			}
			if tmp {
				defer putBuf(scaled.Data.([]float32))
			}
			x = scaled
		}
		xs = nil
	}
	if xs != nil {
		if x.DType != tensor.Float32 || xs.DType != tensor.Float32 {
			return nil, ops.InputErrorf("Mul operands have types %v and %v", x.DType, xs.DType)
		}
		img, scale := x, xs
		if !channelScale(scale, img) {
			img, scale = xs, x
		}
		if !lay.nhwcIn && held != nil && held.w != nil && channelScale(scale, img) {
			x, xscale = img, expandScale(scale, img.Shape)
		} else { // as Mul does
			var err error
			if x, err = arith.MulTensors(x, xs); err != nil {
				return nil, err
			}
		}
	}
	if x.DType != tensor.Float32 {
		return nil, ops.InputErrorf("Conv input is %v, its weight float32", x.DType)
	}
	if !lay.nhwcIn {
		shape = x.Shape // x may have been the Mul's other operand
	}
	g, err := f.geometry(shape)
	if err != nil {
		return nil, err
	}
	r := c.NewSingle(2 + len(g.Out))
	outShape := r.Shape() // the output's: NCHW, then as it is laid out
	outShape[0], outShape[1] = g.Batch, g.M
	copy(outShape[2:], g.Out)
	size, _ := tensor.NumElements(outShape)
	o := outputs.Get().(*output)
	defer releaseOutput(o)
	*o = output{bias: bias, act: act, nhwcIn: lay.nhwcIn, nhwcOut: lay.nhwcOut, nhwcRes: lay.nhwcRes, pooled: lay.pooled, xscale: xscale, biasRep: lay.biasRep, tb: c.Engine().Table()}
	var late *tensor.Tensor // a residual of another shape (broadcast): added after
	if res != nil {
		if res.DType != tensor.Float32 {
			return nil, ops.InputErrorf("Add operands have types %v and %v", tensor.Float32, res.DType)
		}
		want := outShape
		if o.nhwcRes {
			want = nhwcShapeTo(shapes[1][:0], outShape)
		}
		switch {
		case !ops.EqualShape(res.Shape, want):
			late, o.act = res, activation{}
			if o.nhwcRes {
				late = toNCHW(res)
			}
		case o.nhwcOut && !o.nhwcRes: // not a layout the rewrites choose
			o.res, o.nhwcRes = make([]float32, size), true
			nhwcInto(o.res, res.Data.([]float32), g.Batch, g.M, g.OutSize())
		default:
			o.res = res.Data.([]float32)
		}
	}
	if o.nhwcOut { // the channels last, in place
		m := outShape[1]
		copy(outShape[1:], outShape[2:])
		outShape[len(outShape)-1] = m
	}
	xv := x.Data.([]float32)
	dw := held != nil && held.dw != nil && !o.nhwcIn && !o.nhwcOut && (o.res == nil || !o.nhwcRes)
	// A depthwise convolution with a channels-last side runs channels-last
	// (one output channel per input channel, the residual in y's layout).
	dwNHWC := held != nil && held.dw != nil && f.dwt != nil && (o.nhwcIn || o.nhwcOut) && runsNHWC(g) && (o.res == nil || o.nhwcRes == o.nhwcOut)
	planar := !dw && !dwNHWC && held != nil && held.planar != nil && !o.nhwcIn && o.xscale == nil && (o.res == nil || !o.nhwcRes)
	var y []float32
	switch {
	case ownRes && late == nil && !dw && !dwNHWC && !planar && o.writesOverResidual(held, g, size):
		y = o.res
	case o.pooled:
		y = getBuf(size)
	default:
		y = c.Float32Output(size) // every path writes every value
	}
	// The plane kernels finish plane by plane, often a few dozen values:
	// a QDQ output stage (a dozen kernel calls) runs once over all of y
	// instead, y and the residual alike laid out (NCHW, or NHWC: without
	// a residual but channels-last depthwise), on the planes' conv + bias.
	var whole *output
	if (dw || dwNHWC || planar) && o.act.quantizes() {
		whole = &output{act: o.act, res: o.res, tb: o.tb}
		o.act, o.res = activation{}, nil
	}
	switch {
	case dw:
		err = held.dw.forwardTo(c, g, xv, y, o)
	case dwNHWC:
		err = forwardNHWC(c, f.dwPlan(g, c.Engine().Table().DepthwiseAlign), xv, y, o)
	case planar:
		err = held.planar.planarTo(c, g, xv, y, o)
	case held != nil && held.w != nil:
		err = held.w.forwardTo(c, g, xv, y, o)
	default:
		// An empty weight, or a layout the held weight does not run:
		// through NCHW and the plain convolution.
		xn := x
		if o.nhwcIn {
			xn = toNCHW(x)
		}
		var yn *tensor.Tensor
		if yn, err = runConv(c, f.at, held, xn, w, biasTensor(bias)); err == nil {
			yv := yn.Data.([]float32)
			rv := o.res
			if rv != nil && o.nhwcRes {
				rv = toNCHW(&tensor.Tensor{DType: tensor.Float32, Shape: nhwcShape(yn.Shape), Data: rv}).Data.([]float32)
			}
			o.finish(yv, nil, rv)
			if o.nhwcOut {
				nhwcInto(y, yv, g.Batch, g.M, g.OutSize())
			} else {
				copy(y, yv)
			}
		}
	}
	if err == nil && whole != nil {
		err = whole.finishWhole(c, y)
	}
	if err != nil {
		if o.pooled && !sameBuffer(y, o.res) { // the residual's buffer is its reader's to recycle
			putBuf(y)
		}
		return nil, err
	}
	outs := r.Float32s(y)
	if late == nil {
		return outs, nil
	}
	out := r.Tensor()
	if act.rq != nil { // the pair before the residual
		act.rq.ApplyVector(y, y, o.tb.FakeQuantKernels())
	}
	// Broadcast as Add does, in NCHW.
	if o.nhwcOut {
		out = toNCHW(out)
	}
	if o.pooled {
		defer putBuf(y)
	}
	sum, err := arith.AddTensors(out, late)
	if err != nil {
		return nil, err
	}
	sv := sum.Data.([]float32)
	act.apply(sv, o.tb)
	if !o.nhwcOut || sum.Rank() < 3 {
		return r.Hold(sum), nil // a fresh buffer: recycling it is harmless
	}
	n, ch := sum.Shape[0], sum.Shape[1]
	nhwc := getBuf(len(sv))
	nhwcInto(nhwc, sv, n, ch, len(sv)/max(n*ch, 1))
	return r.Hold(&tensor.Tensor{DType: tensor.Float32, Shape: nhwcShape(sum.Shape), Data: nhwc}), nil
}

// scalesRows reports whether the convolution of a channels-last image
// of NCHW shape img times a channel scale xs runs as one product whose
// rows are the image's pixels (held weights, a 1×1 kernel at unit
// stride, no padding, one group), which scales each tile's rows itself.
func (f *fusedConv) scalesRows(img []int, xs *tensor.Tensor) bool {
	if f.held == nil || f.held.w == nil || f.held.dw != nil || f.held.planar != nil || len(img) < 3 {
		return false
	}
	if !channelScale(xs, &tensor.Tensor{DType: tensor.Float32, Shape: img}) {
		return false
	}
	g, err := f.geometry(img)
	return err == nil && g.direct()
}

func biasTensor(b []float32) *tensor.Tensor {
	if b == nil {
		return nil
	}
	return tensor.From([]int{len(b)}, b)
}
