package model

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Convolutions: Conv and ConvTranspose here; ConvInteger and QLinearConv
// in op_conv_integer.go; DeformConv in op_conv_deform.go.
//
// A float32 convolution runs as an implicit GEMM on the same tiles as
// MatMul. The input image is laid out channels-last once; then, for a tile
// of output positions at a time, the tile's im2col rows (one per output
// position, K = kernel offsets × input channels of the group) are gathered
// into a scratch buffer reused for every tile, multiplied by the weights
// (a K×N matrix per group, N = output channels of the group) and written
// into the output. No buffer ever holds the whole image's im2col matrix:
// scratch is a tile, and the only whole-image buffer is the channels-last
// copy of the input, the input's own size.
//
// With a constant weight and Options.Quantize, the weights are quantized
// per output channel at load and the rows per row as they are gathered, on
// the int8 tiles; otherwise the float tiles run them. A depthwise
// convolution (one input channel per group) has a direct loop of its own.
//
// ConvTranspose is the adjoint of a convolution with the same weight
// layout: its rows are its input positions, the product's columns are
// (kernel offset, output channel) pairs, and the product is scattered
// back (col2im) into a channels-last accumulator.

// Conv (11 and 22 widened its types) and ConvTranspose (11 changed how
// SAME_UPPER splits an odd padding) are the operators.
var Conv = ops.Op{register(Descriptor{Type: "Conv", Since: 1, Fold: true}, buildConv)}
var ConvTranspose = ops.Op{
	register(Descriptor{Type: "ConvTranspose", Since: 1, Until: 10, Fold: true}, buildConvTranspose),
	register(Descriptor{Type: "ConvTranspose", Since: 11, Fold: true}, buildConvTranspose),
}

// ConvAttrs are the attributes of Conv, ConvInteger and QLinearConv.
type ConvAttrs struct {
	AutoPad     string  `onnx:"auto_pad" default:"NOTSET"`
	Dilations   []int64 `onnx:"dilations"`
	Group       int64   `onnx:"group" default:"1"`
	KernelShape []int64 `onnx:"kernel_shape"`
	Pads        []int64 `onnx:"pads"`
	Strides     []int64 `onnx:"strides"`

	held *convHeld // the weight the node's kernels hold, if any
}

// ConvTransposeAttrs are the attributes of ConvTranspose.
type ConvTransposeAttrs struct {
	AutoPad       string  `onnx:"auto_pad" default:"NOTSET"`
	Dilations     []int64 `onnx:"dilations"`
	Group         int64   `onnx:"group" default:"1"`
	KernelShape   []int64 `onnx:"kernel_shape"`
	OutputPadding []int64 `onnx:"output_padding"`
	OutputShape   []int64 `onnx:"output_shape"`
	Pads          []int64 `onnx:"pads"`
	Strides       []int64 `onnx:"strides"`

	opset int64
	held  *convHeld
}

// convHeld is a constant weight prepared for the kernels at load. In
// builds with the autodiff tag it also keeps the weight as the kernels
// multiply by it, for backward passes.
type convHeld struct {
	w      *convWeights
	dw     *depthwiseWeights
	dtype  tensor.DataType
	shape  []int
	kernel []float32 // autodiff builds: the weight in float32 (dequantized when int8)
}

// HeldWeight returns, in builds with the autodiff tag, the weight the
// node's kernels multiply by in the file's layout: for int8 layers the
// dequantized weight (the straight-through estimator's), else the weight
// itself. It returns nil when the weight is not a constant the node holds
// or the build has no autodiff support.
func (a *ConvAttrs) HeldWeight() *tensor.Tensor { return a.held.tensor() }

// HeldWeight is ConvAttrs.HeldWeight for ConvTranspose.
func (a *ConvTransposeAttrs) HeldWeight() *tensor.Tensor { return a.held.tensor() }

func (h *convHeld) tensor() *tensor.Tensor {
	if h == nil || h.kernel == nil {
		return nil
	}
	return tensor.From(h.shape, h.kernel)
}

// ConvGeometry is the index map of a convolution over d spatial axes: the
// output at position o (per axis) reads the input at
// o·Strides − PadBegin + k·Dilations for each kernel offset k, where that
// lies inside In; positions outside read zero.
//
// The input has C channels at each In position, the output M at each Out
// position, in Group groups; the weight is [M, C/Group, Kernel...]. A
// ConvTranspose is the adjoint of such a convolution: its input lives at
// the Out positions (M channels), its output at the In positions (C
// channels), with the same weight layout.
type ConvGeometry struct {
	Batch, C, M, Group int
	In, Out, Kernel    []int
	Strides, Dilations []int
	PadBegin           []int
}

// InSize, OutSize and KernelSize are the products of In, Out and Kernel.
func (g *ConvGeometry) InSize() int     { return convProd(g.In) }
func (g *ConvGeometry) OutSize() int    { return convProd(g.Out) }
func (g *ConvGeometry) KernelSize() int { return convProd(g.Kernel) }

func convProd(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}

func (g *ConvGeometry) cg() int { return g.C / g.Group }
func (g *ConvGeometry) mg() int { return g.M / g.Group }

// depthwise reports a convolution of one input channel per group over one
// or two spatial axes, which runs on the direct loop.
func (g *ConvGeometry) depthwise() bool {
	return g.Group > 1 && g.cg() == 1 && len(g.In) <= 2
}

// convMaxAttr bounds every geometry attribute, so sums and products of a
// few of them cannot overflow.
const convMaxAttr = 1 << 32

// checkConvAttrs validates the attributes every convolution shares, at
// load: values a model may not hold are malformed.
func checkConvAttrs(autoPad string, group int64, kernel, strides, dilations, pads []int64) error {
	switch autoPad {
	case "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID":
	default:
		return fmt.Errorf("auto_pad %q is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
	}
	if group < 1 || group > convMaxAttr {
		return fmt.Errorf("group %d must be positive", group)
	}
	for _, a := range []struct {
		name string
		v    []int64
		min  int64
	}{{"kernel_shape", kernel, 1}, {"strides", strides, 1}, {"dilations", dilations, 1}, {"pads", pads, 0}} {
		for _, x := range a.v {
			if x < a.min || x > convMaxAttr {
				return fmt.Errorf("%s %v: each value must lie in [%d, 2^32]", a.name, a.v, a.min)
			}
		}
	}
	if len(pads)%2 != 0 {
		return fmt.Errorf("pads %v must have two values per spatial axis", pads)
	}
	return nil
}

// convAxes returns attribute v as d ints, def when absent.
func convAxes(name string, v []int64, d, def int) ([]int, error) {
	out := make([]int, d)
	if v == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != d {
		return nil, inputErrorf("%s %v has %d values for %d spatial axes", name, v, len(v), d)
	}
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

// convShapes checks the ranks of x and w and the kernel_shape attribute
// against w; it returns the number of spatial axes.
func convShapes(op string, x, w []int, kernel []int64) (int, error) {
	if len(w) < 3 {
		return 0, inputErrorf("%s weight must have rank >= 3, got %s", op, tensor.ShapeString(w))
	}
	d := len(w) - 2
	if len(x) != d+2 {
		return 0, inputErrorf("%s input %s must have rank %d for weight %s", op, tensor.ShapeString(x), d+2, tensor.ShapeString(w))
	}
	if kernel != nil {
		if len(kernel) != d {
			return 0, inputErrorf("%s kernel_shape %v does not fit weight %s", op, kernel, tensor.ShapeString(w))
		}
		for i, k := range kernel {
			if int(k) != w[2+i] {
				return 0, inputErrorf("%s kernel_shape %v does not fit weight %s", op, kernel, tensor.ShapeString(w))
			}
		}
	}
	for _, k := range w[2:] {
		if k < 1 {
			return 0, inputErrorf("%s weight %s has an empty kernel", op, tensor.ShapeString(w))
		}
	}
	return d, nil
}

// Geometry resolves the convolution of input shape x by weight shape w.
func (a *ConvAttrs) Geometry(x, w []int) (*ConvGeometry, error) {
	return convGeometry("Conv", x, w, a.AutoPad, int(a.Group), a.KernelShape, a.Strides, a.Dilations, a.Pads)
}

func convGeometry(op string, x, w []int, autoPad string, group int, kernel, strides, dilations, pads []int64) (*ConvGeometry, error) {
	d, err := convShapes(op, x, w, kernel)
	if err != nil {
		return nil, err
	}
	g := &ConvGeometry{Batch: x[0], C: x[1], M: w[0], Group: group, In: x[2:], Kernel: w[2:]}
	if g.C != w[1]*group {
		return nil, inputErrorf("%s input has %d channels, weight %s with group %d takes %d", op, g.C, tensor.ShapeString(w), group, w[1]*group)
	}
	if g.M%group != 0 {
		return nil, inputErrorf("%s weight %s has %d output channels, not a multiple of group %d", op, tensor.ShapeString(w), g.M, group)
	}
	if g.Strides, err = convAxes("strides", strides, d, 1); err != nil {
		return nil, err
	}
	if g.Dilations, err = convAxes("dilations", dilations, d, 1); err != nil {
		return nil, err
	}
	p, err := convAxes("pads", pads, 2*d, 0)
	if err != nil {
		return nil, err
	}
	g.Out, g.PadBegin = make([]int, d), make([]int, d)
	for i := 0; i < d; i++ {
		in, k, s, dil := g.In[i], g.Kernel[i], g.Strides[i], g.Dilations[i]
		ext := (k-1)*dil + 1
		switch autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			out := (in + s - 1) / s
			total := max(0, (out-1)*s+ext-in)
			g.PadBegin[i] = total / 2
			if autoPad == "SAME_LOWER" {
				g.PadBegin[i] = total - total/2
			}
			g.Out[i] = out
			continue
		case "VALID":
			p[i], p[i+d] = 0, 0
		}
		span := in + p[i] + p[i+d]
		if in == 0 { // an empty axis stays empty
			g.Out[i], g.PadBegin[i] = 0, p[i]
			continue
		}
		if span < ext {
			return nil, inputErrorf("%s input %s with pads %v is smaller than the kernel %v (dilations %v) along axis %d", op, tensor.ShapeString(x), p, g.Kernel, g.Dilations, i+2)
		}
		g.Out[i] = (span-ext)/s + 1
		g.PadBegin[i] = p[i]
	}
	if _, err := tensor.NumElements(append([]int{g.Batch, g.M}, g.Out...)); err != nil {
		return nil, inputErrorf("%s output: %v", op, err)
	}
	return g, nil
}

// Geometry resolves the ConvTranspose of input shape x by weight shape w,
// as the geometry of the convolution it is the adjoint of.
func (a *ConvTransposeAttrs) Geometry(x, w []int) (*ConvGeometry, error) {
	const op = "ConvTranspose"
	d, err := convShapes(op, x, w, a.KernelShape)
	if err != nil {
		return nil, err
	}
	group := int(a.Group)
	g := &ConvGeometry{Batch: x[0], C: w[1] * group, M: w[0], Group: group, Out: x[2:], Kernel: w[2:]}
	if x[1] != w[0] {
		return nil, inputErrorf("%s input has %d channels, weight %s takes %d", op, x[1], tensor.ShapeString(w), w[0])
	}
	if g.M%group != 0 {
		return nil, inputErrorf("%s weight %s has %d input channels, not a multiple of group %d", op, tensor.ShapeString(w), g.M, group)
	}
	if g.Strides, err = convAxes("strides", a.Strides, d, 1); err != nil {
		return nil, err
	}
	if g.Dilations, err = convAxes("dilations", a.Dilations, d, 1); err != nil {
		return nil, err
	}
	outPad, err := convAxes("output_padding", a.OutputPadding, d, 0)
	if err != nil {
		return nil, err
	}
	var outShape []int
	if os := a.OutputShape; os != nil {
		if len(os) == d+2 { // the whole shape; only its spatial part counts
			os = os[2:]
		}
		if outShape, err = convAxes("output_shape", os, d, 0); err != nil {
			return nil, err
		}
	}
	g.In, g.PadBegin = make([]int, d), make([]int, d)
	var pads []int
	if a.Pads != nil {
		if pads, err = convAxes("pads", a.Pads, 2*d, 0); err != nil {
			return nil, err
		}
	}
	same := a.AutoPad == "SAME_UPPER" || a.AutoPad == "SAME_LOWER"
	for i := 0; i < d; i++ {
		in, k, s, dil := g.Out[i], g.Kernel[i], g.Strides[i], g.Dilations[i]
		full := s*(in-1) + outPad[i] + (k-1)*dil + 1
		switch {
		case pads == nil && same:
			out := in * s
			if outShape != nil {
				out = outShape[i]
			}
			total := full - out
			small := convFloorDiv(total, 2)
			// Opset 11 puts the smaller half first for SAME_UPPER; opset
			// 1 put it last.
			first := small
			if (a.AutoPad == "SAME_UPPER") != (a.opset >= 11) {
				first = total - small
			}
			g.PadBegin[i], g.In[i] = first, out
		case pads == nil:
			g.In[i] = full
			if outShape != nil {
				g.In[i] = outShape[i]
			}
		default:
			g.PadBegin[i] = pads[i]
			g.In[i] = full - pads[i] - pads[i+d]
			if outShape != nil {
				g.In[i] = outShape[i]
			}
		}
		if g.In[i] < 0 {
			return nil, inputErrorf("%s output size %d along axis %d is negative (input %s, pads %v)", op, g.In[i], i+2, tensor.ShapeString(x), a.Pads)
		}
	}
	if _, err := tensor.NumElements(append([]int{g.Batch, g.C}, g.In...)); err != nil {
		return nil, inputErrorf("%s output: %v", op, err)
	}
	return g, nil
}

func convFloorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// convWeights are a convolution's weights prepared for the kernels: for
// each group, the K×N matrix of its product, quantized and packed for the
// int8 tiles (q) or packed for the float tiles (f).
//
// The forward product of group gi has rows (kernel offset, input channel)
// and columns output channels:
//
//	B[kidx·Cg + ci][co] = W[gi·Mg + co][ci][kidx]
//
// and the adjoint product (ConvTranspose) its transpose.
type convWeights struct {
	transposed bool // the adjoint product's matrix
	k, n       int
	q          []*gemm.QWeights
	f          []*gemm.FWeights
}

// convMatrix returns group gi's product matrix of weight w (M×Cg×kk).
func convMatrix(w []float32, m, cg, kk, group, gi int, adjoint bool) []float32 {
	mg := m / group
	kdim := kk * cg
	b := make([]float32, kdim*mg)
	for co := 0; co < mg; co++ {
		for ci := 0; ci < cg; ci++ {
			src := w[((gi*mg+co)*cg+ci)*kk:][:kk]
			for kidx, v := range src {
				r := kidx*cg + ci
				if adjoint {
					b[co*kdim+r] = v
				} else {
					b[r*mg+co] = v
				}
			}
		}
	}
	return b
}

// prepareConvWeights prepares w (shape [M, Cg, kernel...]) in group groups,
// quantized with scheme when quantize is set.
func prepareConvWeights(w []float32, shape []int, group int, adjoint, quantize bool, scheme quant.Scheme) (*convWeights, error) {
	m, cg, kk := shape[0], shape[1], convProd(shape[2:])
	cw := &convWeights{transposed: adjoint, k: kk * cg, n: m / group}
	if adjoint {
		cw.k, cw.n = cw.n, cw.k
	}
	for gi := 0; gi < group; gi++ {
		b := convMatrix(w, m, cg, kk, group, gi, adjoint)
		if !quantize {
			cw.f = append(cw.f, convPackF(cw.k, cw.n, b))
			continue
		}
		qw, err := quant.QuantizeWeights(b, cw.k, cw.n, scheme)
		if err != nil {
			return nil, err
		}
		p, err := convPackQ(qw)
		if err != nil {
			return nil, err
		}
		cw.q = append(cw.q, p)
	}
	return cw, nil
}

// dequantizedConvWeight returns w as the int8 kernels see it: quantized and
// dequantized group by group, in w's own layout.
func dequantizedConvWeight(w []float32, shape []int, group int, adjoint bool, scheme quant.Scheme) ([]float32, error) {
	m, cg, kk := shape[0], shape[1], convProd(shape[2:])
	mg := m / group
	out := make([]float32, len(w))
	for gi := 0; gi < group; gi++ {
		b := convMatrix(w, m, cg, kk, group, gi, adjoint)
		k, n := kk*cg, mg
		if adjoint {
			k, n = n, k
		}
		qw, err := quant.QuantizeWeights(b, k, n, scheme)
		if err != nil {
			return nil, err
		}
		deq := qw.Dequantize()
		for co := 0; co < mg; co++ {
			for ci := 0; ci < cg; ci++ {
				dst := out[((gi*mg+co)*cg+ci)*kk:][:kk]
				for kidx := range dst {
					r := kidx*cg + ci
					if adjoint {
						dst[kidx] = deq[co*n+r]
					} else {
						dst[kidx] = deq[r*mg+co]
					}
				}
			}
		}
	}
	return out, nil
}

// convQuantizeMinChannels is the fewest input channels per group a
// convolution needs to run on the int8 tiles: below it (an image's first
// layer) the rows are short and products small, int8 does not pay and
// costs the most accuracy where the signal enters the network.
const convQuantizeMinChannels = 4

// convMinQuantizedWeights is the smallest convolution weight (K·N) run on
// the int8 tiles. It is twice MatMul's: the narrow 1×1 projections of
// mobile CNNs' inverted residual blocks (K·N of a few thousand, no
// activation after them) carry quantization error straight into the
// residual sum. The PaddleOCR text-direction classifier ends 2.1% of its
// output range from ONNX Runtime with convolutions down to 4,096 weights
// in int8, and 0.6% from 8,192 up.
const convMinQuantizedWeights = 2 * MinQuantizedWeights

// convKernelsFor decides how a convolution with a constant weight runs:
// quantized (true) or float32, and says why in the Layer's words.
func convKernelsFor(opts *Options, cg, k, n int) (bool, string) {
	switch {
	case !opts.Quantize:
		return false, "float32"
	case k > convMaxQK:
		return false, fmt.Sprintf("float32 (K = %d is beyond the int8 tiles)", k)
	case cg < convQuantizeMinChannels:
		return false, fmt.Sprintf("float32 (input layer: %d input channels)", cg)
	case k*n < convMinQuantizedWeights:
		return false, "float32 (small weight)"
	}
	return true, "int8 " + opts.Scheme.String()
}

// Every call into the GEMM driver (package gemm) goes through the
// functions below, and the Engine methods they call.

const convMaxQK = gemm.MaxQK

func convPackQ(w *quant.Weights) (*gemm.QWeights, error) { return gemm.PackQ(w) }

func convPackF(k, n int, b []float32) *gemm.FWeights { return gemm.PackF(k, n, b, n) }

var (
	convSerialExecs sync.Map // *dispatch.Table -> *gemm.Engine with one core
	convPools       sync.Map // thread count -> *gemm.Pool
)

// convSerial returns a one-core Exec on e's kernels: tasks that already
// run in parallel use it so products inside them do not split again.
func convSerial(e *gemm.Engine) *gemm.Engine {
	if v, ok := convSerialExecs.Load(e.Table()); ok {
		return v.(*gemm.Engine)
	}
	v, _ := convSerialExecs.LoadOrStore(e.Table(), gemm.New(e.Table(), 1))
	return v.(*gemm.Engine)
}

func convPool(threads int) *gemm.Pool {
	if v, ok := convPools.Load(threads); ok {
		return v.(*gemm.Pool)
	}
	v, _ := convPools.LoadOrStore(threads, gemm.NewPool(threads))
	return v.(*gemm.Pool)
}

// convParallelWork is the work (multiply-adds) below which a convolution's
// tasks run in order on the caller.
const convParallelWork = 1 << 20

// convRun runs tasks 0..n-1 (each task's scratch from convScratchPool).
// With work enough for every core and at least two tasks per core, tasks
// spread over e's cores, products inside them on a one-core Exec; otherwise
// they run here in order, and products split across cores on their own.
// It returns the first error a task returned.
func convRun(e *gemm.Engine, n int, work int, f func(e *gemm.Engine, s *convScratch, task int) error) error {
	threads := e.Threads()
	if threads <= 1 || n < 2*threads || work < convParallelWork {
		s := getConvScratch()
		defer putConvScratch(s)
		for i := 0; i < n; i++ {
			if err := f(e, s, i); err != nil {
				return err
			}
		}
		return nil
	}
	serial := convSerial(e)
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	tasks := make([]func(), threads)
	for w := range tasks {
		tasks[w] = func() {
			s := getConvScratch()
			defer putConvScratch(s)
			for firstErr.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(serial, s, i); err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}
	}
	if err := convPool(threads).Run(tasks); err != nil {
		return err
	}
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// convScratch is one worker's tile buffers, reused from tile to tile and
// call to call.
type convScratch struct {
	rows, out, part []float32
	bytes           []uint8
	sbytes          []int8
	ints            []int32
	qrows           gemm.QRows
}

var convScratchPool = sync.Pool{New: func() any { return new(convScratch) }}

func getConvScratch() *convScratch  { return convScratchPool.Get().(*convScratch) }
func putConvScratch(s *convScratch) { convScratchPool.Put(s) }

func convGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// convTileBudget bounds a tile's buffers (elements of its widest matrix).
const convTileBudget = 1 << 15

// convTileRows returns the output positions per tile for rows of width w:
// a multiple of 12 (whole row tiles of every table) between 24 and 240.
func convTileRows(w int) int {
	t := convTileBudget / max(w, 1)
	return min(max(t/12*12, 24), 240)
}

// convTransposeTo writes dst (cols×rows) = srcᵀ for src rows×cols, in
// parallel stripes of columns when large, on e's kernels.
func convTransposeTo(e *gemm.Engine, dst, src []float32, rows, cols int) {
	if rows == 1 || cols == 1 {
		copy(dst, src[:rows*cols])
		return
	}
	transpose := e.Table().TransposeCols
	const stripe = 256
	n := (cols + stripe - 1) / stripe
	_ = convRun(e, n, rows*cols*8, func(_ *gemm.Engine, _ *convScratch, i int) error {
		transpose(dst, src, rows, cols, 0, i*stripe, min((i+1)*stripe, cols))
		return nil
	})
}

// convChannelsLast writes the image x (c×size) into dst (size×c).
func convChannelsLast(e *gemm.Engine, dst, x []float32, c, size int) {
	convTransposeTo(e, dst, x, c, size)
}

// convTaps are a geometry's kernel offsets, in row-major kernel order: the
// per-axis displacement k·dilation and the displacement over the
// row-major In positions.
type convTaps struct {
	g      *ConvGeometry
	d      int
	disp   []int // kk×d
	lin    []int // kk
	inStr  []int
	outStr []int
	extent []int // (k-1)·dilation per axis
	// With one group and unit dilation along the last axis, the taps of
	// one kernel row read adjacent positions, which channels-last are one
	// run of run·C values; runLin holds each run's first tap's lin.
	run    int
	runLin []int
}

func newConvTaps(g *ConvGeometry) *convTaps {
	d := len(g.In)
	kk := g.KernelSize()
	t := &convTaps{g: g, d: d, disp: make([]int, kk*d), lin: make([]int, kk), inStr: tensor.Strides(g.In), outStr: tensor.Strides(g.Out), extent: make([]int, d)}
	for i := 0; i < d; i++ {
		t.extent[i] = (g.Kernel[i] - 1) * g.Dilations[i]
	}
	kStr := tensor.Strides(g.Kernel)
	for kidx := 0; kidx < kk; kidx++ {
		for i := 0; i < d; i++ {
			k := kidx / kStr[i] % g.Kernel[i]
			t.disp[kidx*d+i] = k * g.Dilations[i]
			t.lin[kidx] += k * g.Dilations[i] * t.inStr[i]
		}
	}
	t.run = 1
	if d > 0 && g.Group == 1 && g.Dilations[d-1] == 1 {
		t.run = g.Kernel[d-1]
	}
	for kidx := 0; kidx < kk; kidx += t.run {
		t.runLin = append(t.runLin, t.lin[kidx])
	}
	return t
}

// convPos walks output positions in row-major order, keeping the input
// position of kernel offset 0 (base) per axis.
type convPos struct {
	t        *convTaps
	o, base  []int
	interior bool // every kernel offset lands inside In
	lin      int  // linear In index of base, when interior
}

func (t *convTaps) pos(p int) *convPos {
	c := &convPos{t: t, o: make([]int, t.d), base: make([]int, t.d)}
	for i := 0; i < t.d; i++ {
		c.o[i] = p / t.outStr[i] % t.g.Out[i]
	}
	c.update()
	return c
}

func (c *convPos) update() {
	g := c.t.g
	c.interior, c.lin = true, 0
	for i := range c.o {
		b := c.o[i]*g.Strides[i] - g.PadBegin[i]
		c.base[i] = b
		if b < 0 || b+c.t.extent[i] >= g.In[i] {
			c.interior = false
		}
		c.lin += b * c.t.inStr[i]
	}
}

func (c *convPos) next() {
	g := c.t.g
	for i := len(c.o) - 1; i >= 0; i-- {
		c.o[i]++
		if c.o[i] < g.Out[i] {
			break
		}
		c.o[i] = 0
	}
	c.update()
}

// at returns the linear In index kernel offset kidx reads, or -1 when it
// falls in the padding.
func (c *convPos) at(kidx int) int {
	if c.interior {
		return c.lin + c.t.lin[kidx]
	}
	g, d := c.t.g, c.t.d
	lin := 0
	for i := 0; i < d; i++ {
		v := c.base[i] + c.t.disp[kidx*d+i]
		if v < 0 || v >= g.In[i] {
			return -1
		}
		lin += v * c.t.inStr[i]
	}
	return lin
}

// gatherRows writes the im2col rows of output positions [p0, p0+t) of
// group gi into rows (t×kk·Cg): row r, column kidx·Cg+ci is input channel
// gi·Cg+ci at the position kernel offset kidx reads, zero in the padding.
// xt is the image channels-last (InSize×C).
func (t *convTaps) gatherRows(rows, xt []float32, gi, p0, n int) {
	convGather(t, rows, xt, gi, p0, n, 0)
}

// convGather is gatherRows for any element type, pad in the padding.
func convGather[T float32 | uint8 | int8](t *convTaps, rows, xt []T, gi, p0, n int, pad T) {
	g := t.g
	c, cg := g.C, g.cg()
	kk := len(t.lin)
	k := kk * cg
	pos := t.pos(p0)
	xg := xt[gi*cg:]
	for r := 0; r < n; r++ {
		row := rows[r*k : (r+1)*k]
		if pos.interior {
			base := pos.lin
			w := t.run * cg // values per run
			if w >= 16 {
				for j, off := range t.runLin {
					at := (base + off) * c
					copy(row[j*w:(j+1)*w], xg[at:at+w])
				}
			} else {
				for j, off := range t.runLin {
					at := (base + off) * c
					dst, src := row[j*w:(j+1)*w], xg[at:at+w]
					for i := range dst {
						dst[i] = src[i]
					}
				}
			}
		} else {
			for kidx := 0; kidx < kk; kidx++ {
				dst := row[kidx*cg : (kidx+1)*cg]
				if at := pos.at(kidx); at >= 0 {
					copy(dst, xg[at*c:at*c+cg])
				} else {
					for i := range dst {
						dst[i] = pad
					}
				}
			}
		}
		pos.next()
	}
}

// direct reports a geometry whose im2col rows are the channels-last image
// itself: a 1×1 kernel, unit strides, no padding, one group.
func (g *ConvGeometry) direct() bool {
	if g.Group != 1 || g.KernelSize() != 1 {
		return false
	}
	for i := range g.In {
		if g.Strides[i] != 1 || g.PadBegin[i] != 0 || g.Out[i] != g.In[i] {
			return false
		}
	}
	return true
}

// forward computes y (Batch×M×OutSize) = conv(x (Batch×C×InSize)) + bias
// (nil or M values) on the kernels.
func (cw *convWeights) forward(e *gemm.Engine, g *ConvGeometry, x, bias, y []float32) error {
	return cw.forwardTo(e, g, x, y, &convOutput{bias: bias})
}

// forwardTo computes y = o.finish(conv(x)) on the kernels, x and y laid out
// as o says. Tasks are tiles of output positions of one group of one
// image; with y channels-last the kernels write each tile's product into
// y itself (row stride M), and the tile is finished in place.
func (cw *convWeights) forwardTo(e *gemm.Engine, g *ConvGeometry, x, y []float32, o *convOutput) error {
	inSize, outSize := g.InSize(), g.OutSize()
	mg := g.mg()
	tb := e.Table()
	o.tb = tb
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	if cw.k == 0 { // no input channels: the bias alone
		clear(y)
		o.finishAll(g, y)
		return nil
	}
	taps := newConvTaps(g)
	tile := convTileRows(max(cw.k, cw.n))
	tiles := (outSize + tile - 1) / tile
	direct := g.direct()
	img := inSize * g.C
	xt := x
	if !o.nhwcIn {
		xt = convGrow(getConvImage(), g.Batch*img)
		defer putConvImage(xt)
		for b := 0; b < g.Batch; b++ {
			convChannelsLast(e, xt[b*img:], x[b*img:], g.C, inSize)
			if o.xscale != nil { // as Mul does, before the product
				tb.ScaleRows(xt[b*img:(b+1)*img], o.xscale[b*g.C:(b+1)*g.C])
			}
		}
	}
	per := tiles * g.Group
	return convRun(e, g.Batch*per, g.Batch*outSize*cw.k*g.M, func(e *gemm.Engine, s *convScratch, task int) error {
		b, gi, p0 := task/per, task%per/tiles, task%tiles*tile
		n := min(tile, outSize-p0)
		xb := xt[b*img : (b+1)*img]
		var rows []float32
		if direct {
			rows = xb[p0*g.C : (p0+n)*g.C]
		} else {
			s.rows = convGrow(s.rows, n*cw.k)
			rows = s.rows
			taps.gatherRows(rows, xb, gi, p0, n)
		}
		m0 := gi * mg
		var bias []float32
		if o.bias != nil {
			bias = o.bias[m0 : m0+mg]
		}
		yb := y[b*outSize*g.M : (b+1)*outSize*g.M]
		if o.nhwcOut {
			if err := cw.gemmTo(e, s, gi, rows, n, yb[p0*g.M+m0:], g.M); err != nil {
				return err
			}
			if rep, ok := o.tileBias(g, n); ok { // the tile's rows are adjacent: one pass
				at := p0 * g.M
				var res []float32
				if o.res != nil {
					res = o.res[b*outSize*g.M+at:][:n*mg]
				}
				o.finish(yb[at:at+n*mg], rep, res)
				return nil
			}
			for r := p0; r < p0+n; r++ {
				at := r*g.M + m0
				var res []float32
				if o.res != nil {
					res = o.res[b*outSize*g.M+at:][:mg]
				}
				o.finish(yb[at:at+mg], bias, res)
			}
			return nil
		}
		s.out = convGrow(s.out, n*mg)
		if err := cw.gemmTo(e, s, gi, rows, n, s.out, mg); err != nil {
			return err
		}
		// Finished in the tile, but for an NCHW residual, which is added
		// to the planes (then the activation).
		inTile := o.res == nil || o.nhwcRes
		rep, whole := o.tileBias(g, n)
		whole = whole && inTile
		if whole {
			var res []float32
			if o.res != nil {
				res = o.res[(b*outSize+p0)*g.M:][:n*mg]
			}
			o.finish(s.out[:n*mg], rep, res)
		}
		for r := 0; r < n && !whole; r++ {
			var res []float32
			if o.res != nil && o.nhwcRes {
				res = o.res[(b*outSize+p0+r)*g.M+m0:][:mg]
			}
			if inTile {
				o.finish(s.out[r*mg:(r+1)*mg], bias, res)
			} else if bias != nil {
				convAdd(s.out[r*mg:(r+1)*mg], bias)
			}
		}
		convTransposeStrided(tb, yb[m0*outSize+p0:], outSize, s.out, mg, n, mg)
		if !inTile {
			for co := 0; co < mg; co++ {
				at := (m0+co)*outSize + p0
				var res []float32
				if o.res != nil {
					res = o.res[b*outSize*g.M+at:][:n]
				}
				o.finish(yb[at:at+n], nil, res)
			}
		}
		return nil
	})
}

// gemmTo computes group gi's product of m rows a into c (row stride ldc).
func (cw *convWeights) gemmTo(e *gemm.Engine, s *convScratch, gi int, a []float32, m int, c []float32, ldc int) error {
	if m == 0 {
		return nil
	}
	if cw.q != nil {
		w := cw.q[gi]
		if err := e.QuantizeRows(&s.qrows, a, m, w.K, w.K); err != nil {
			if errors.Is(err, gemm.ErrNotFinite) {
				return inputErrorf("%v", err)
			}
			return err
		}
		return e.QMatMulRows(&s.qrows, w, c, ldc)
	}
	w := cw.f[gi]
	return e.MatMulStrided(a, m, w.K, w, c, ldc)
}

// convTransposeStrided writes dst[c·ldd + r] = src[r·lds + c] for r < rows,
// c < cols: a tile of rows (output positions) into channel planes, eight
// rows at a time on tb's kernels.
func convTransposeStrided(tb *dispatch.Table, dst []float32, ldd int, src []float32, lds, rows, cols int) {
	r := 0
	if cols > 0 {
		for ; r+8 <= rows; r += 8 {
			tb.Transpose8(dst[r:(cols-1)*ldd+r+8], src[r*lds:(r+7)*lds+cols], ldd, lds, cols)
		}
	}
	for ; r+4 <= rows; r += 4 {
		s0, s1, s2, s3 := src[r*lds:][:cols], src[(r+1)*lds:][:cols], src[(r+2)*lds:][:cols], src[(r+3)*lds:][:cols]
		for c := range s0 {
			d := dst[c*ldd+r : c*ldd+r+4 : c*ldd+r+4]
			d[0], d[1], d[2], d[3] = s0[c], s1[c], s2[c], s3[c]
		}
	}
	for ; r < rows; r++ {
		sr := src[r*lds:][:cols]
		for c, v := range sr {
			dst[c*ldd+r] = v
		}
	}
}

func convFillBias(y, bias []float32, batch, m, size int) {
	if bias == nil {
		clear(y)
		return
	}
	for b := 0; b < batch; b++ {
		for c := 0; c < m; c++ {
			dst := y[(b*m+c)*size : (b*m+c+1)*size]
			for i := range dst {
				dst[i] = bias[c]
			}
		}
	}
}

// convImages recycles the channels-last copies of input images.
var convImages sync.Pool

func getConvImage() []float32 {
	if v := convImages.Get(); v != nil {
		return *(v.(*[]float32))
	}
	return nil
}

func putConvImage(b []float32) { convImages.Put(&b) }

// adjoint computes x (Batch×C×InSize) = convᵀ(y (Batch×M×OutSize)) + bias
// (nil or C values): ConvTranspose, and the data gradient of Conv. The
// rows are y's positions, channels-last; each product row is scattered
// back to the In positions its kernel offsets reach, in a channels-last
// accumulator. Tiles run in order (their scatters overlap); products split
// across cores.
func (cw *convWeights) adjoint(e *gemm.Engine, g *ConvGeometry, y, bias, x []float32) error {
	inSize, outSize := g.InSize(), g.OutSize()
	cg, mg := g.cg(), g.mg()
	if g.Batch == 0 || g.C == 0 || inSize == 0 {
		return nil
	}
	if cw.k == 0 || outSize == 0 {
		convFillBias(x, bias, g.Batch, g.C, inSize)
		return nil
	}
	taps := newConvTaps(g)
	kk := len(taps.lin)
	tile := convTileRows(max(cw.k, cw.n))
	yt := convGrow(getConvImage(), outSize*g.M)
	defer putConvImage(yt)
	acc := make([]float32, inSize*g.C)
	s := getConvScratch()
	defer putConvScratch(s)
	for b := 0; b < g.Batch; b++ {
		convChannelsLast(e, yt, y[b*g.M*outSize:], g.M, outSize)
		clear(acc)
		for gi := 0; gi < g.Group; gi++ {
			for p0 := 0; p0 < outSize; p0 += tile {
				n := min(tile, outSize-p0)
				var rows []float32
				if g.Group == 1 {
					rows = yt[p0*g.M : (p0+n)*g.M]
				} else {
					s.rows = convGrow(s.rows, n*mg)
					rows = s.rows
					for r := 0; r < n; r++ {
						copy(rows[r*mg:(r+1)*mg], yt[(p0+r)*g.M+gi*mg:])
					}
				}
				s.out = convGrow(s.out, n*cw.n)
				if err := cw.gemmTo(e, s, gi, rows, n, s.out, cw.n); err != nil {
					return err
				}
				pos := taps.pos(p0)
				for r := 0; r < n; r++ {
					prod := s.out[r*cw.n : (r+1)*cw.n]
					for kidx := 0; kidx < kk; kidx++ {
						if at := pos.at(kidx); at >= 0 {
							convAdd(acc[at*g.C+gi*cg:at*g.C+(gi+1)*cg], prod[kidx*cg:])
						}
					}
					pos.next()
				}
			}
		}
		xb := x[b*g.C*inSize : (b+1)*g.C*inSize]
		convTransposeTo(e, xb, acc, inSize, g.C)
		if bias != nil {
			for c := 0; c < g.C; c++ {
				dst := xb[c*inSize : (c+1)*inSize]
				for i := range dst {
					dst[i] += bias[c]
				}
			}
		}
	}
	return nil
}

// convAdd adds src to dst (len(dst) values).
func convAdd(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// depthwiseWeights are a depthwise convolution's weights: M planes of
// kernel values (channel multiplier M/C).
type depthwiseWeights struct {
	w []float32
}

// depthwise computes y = conv(x) + bias for a depthwise geometry, one
// (image, output channel) plane per task, each row of taps on e's kernels.
func (dw *depthwiseWeights) forward(e *gemm.Engine, g *ConvGeometry, x, bias, y []float32) error {
	return dw.forwardTo(e, g, x, y, &convOutput{bias: bias})
}

// forwardTo is forward finished by o, whose layouts must be NCHW.
func (dw *depthwiseWeights) forwardTo(e *gemm.Engine, g *ConvGeometry, x, y []float32, o *convOutput) error {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	mg := g.mg()
	if g.Batch == 0 || g.M == 0 || outSize == 0 {
		return nil
	}
	p := convPlane2D(g)
	o.tb = e.Table()
	taps := o.tb.ConvTaps
	finish := o.res != nil || o.act.kind != convActNone
	return convRun(e, g.Batch*g.M, g.Batch*g.M*outSize*kk, func(_ *gemm.Engine, s *convScratch, task int) error {
		b, m := task/g.M, task%g.M
		c := m / mg
		var bv float32
		if o.bias != nil {
			bv = o.bias[m]
		}
		s.part = convGrow(s.part, p.phaseLen())
		plane := y[(b*g.M+m)*outSize:][:outSize]
		p.run(plane, x[(b*g.C+c)*inSize:][:inSize], dw.w[m*kk:][:kk], bv, s.part, taps)
		if finish {
			var res []float32
			if o.res != nil {
				res = o.res[(b*g.M+m)*outSize:][:outSize]
			}
			o.finish(plane, nil, res)
		}
		return nil
	})
}

// convPlane is a 2-D single-channel convolution (1-D as height 1).
type convPlane struct {
	h, w, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw int
}

func convPlane2D(g *ConvGeometry) convPlane {
	if len(g.In) == 1 {
		return convPlane{h: 1, w: g.In[0], oh: 1, ow: g.Out[0], kh: 1, kw: g.Kernel[0], sh: 1, sw: g.Strides[0], dh: 1, dw: g.Dilations[0], pw: g.PadBegin[0]}
	}
	return convPlane{h: g.In[0], w: g.In[1], oh: g.Out[0], ow: g.Out[1], kh: g.Kernel[0], kw: g.Kernel[1],
		sh: g.Strides[0], sw: g.Strides[1], dh: g.Dilations[0], dw: g.Dilations[1], ph: g.PadBegin[0], pw: g.PadBegin[1]}
}

// phaseLen is the scratch a plane needs: with unit stride along the
// row, its zero-padded copy (runPadded); otherwise its columns split into
// sw phases (the columns ≡ ph mod sw, each a unit-stride row).
func (p *convPlane) phaseLen() int {
	if p.sw == 1 {
		hp, wp := p.padDims()
		return hp * wp
	}
	return p.sw * p.h * p.phaseRow()
}

// padDims returns the rows and columns of the padded copy: every tap of
// every output falls inside it.
func (p *convPlane) padDims() (hp, wp int) {
	return (p.oh-1)*p.sh + (p.kh-1)*p.dh + 1, p.ow + (p.kw-1)*p.dw
}

// runPadded is run for unit stride along the row: it copies x into pad
// with the padding as zeros, then runs one taps call per output row and
// kernel row, with no border columns (the padding's products are zeros).
func (p *convPlane) runPadded(out, x, w []float32, b float32, pad []float32, taps func(dst, src, w []float32, step int)) {
	hp, wp := p.padDims()
	pad = pad[:hp*wp]
	clear(pad)
	left := min(p.pw, wp)
	n := max(0, min(p.w, wp-left))
	for iy := max(0, -p.ph); iy < p.h && iy+p.ph < hp; iy++ {
		py := iy + p.ph
		copy(pad[py*wp+left:py*wp+left+n], x[iy*p.w:iy*p.w+n])
	}
	convFill(out[:p.oh*p.ow], b)
	for oy := 0; oy < p.oh; oy++ {
		orow := out[oy*p.ow : (oy+1)*p.ow]
		for ky := 0; ky < p.kh; ky++ {
			py := oy*p.sh + ky*p.dh
			taps(orow, pad[py*wp:], w[ky*p.kw:(ky+1)*p.kw], p.dw)
		}
	}
}

// convFill sets every value of dst to v.
func convFill(dst []float32, v float32) {
	if len(dst) == 0 {
		return
	}
	dst[0] = v
	for i := 1; i < len(dst); i *= 2 {
		copy(dst[i:], dst[:i])
	}
}

func (p *convPlane) phaseRow() int { return (p.w + p.sw - 1) / p.sw }

// run computes out (oh×ow) = b + Σ w·x over one plane, a kernel row at a
// time: with unit stride along the row on a padded copy (runPadded); with
// stride sw, each tap reads a unit-stride run of the phase its offset
// falls in.
func (p *convPlane) run(out, x, w []float32, b float32, phases []float32, taps func(dst, src, w []float32, step int)) {
	if p.sw == 1 {
		p.runPadded(out, x, w, b, phases, taps)
		return
	}
	pl := p.phaseRow()
	if p.sw > 1 {
		for iy := 0; iy < p.h; iy++ {
			row := x[iy*p.w : (iy+1)*p.w]
			for ph := 0; ph < p.sw; ph++ {
				dst := phases[(ph*p.h+iy)*pl : (ph*p.h+iy+1)*pl]
				for j := range dst {
					if c := j*p.sw + ph; c < p.w {
						dst[j] = row[c]
					} else {
						dst[j] = 0
					}
				}
			}
		}
	}
	for oy := 0; oy < p.oh; oy++ {
		orow := out[oy*p.ow : (oy+1)*p.ow]
		convFill(orow, b)
		for ky := 0; ky < p.kh; ky++ {
			iy := oy*p.sh - p.ph + ky*p.dh
			if iy < 0 || iy >= p.h {
				continue
			}
			wrow := w[ky*p.kw : (ky+1)*p.kw]
			for kx := range wrow {
				off := kx*p.dw - p.pw
				ph, base := off%p.sw, convFloorDiv(off, p.sw)
				if ph < 0 {
					ph += p.sw
				}
				n := 0 // the phase's columns inside the row
				if ph < p.w {
					n = (p.w-1-ph)/p.sw + 1
				}
				lo, hi := max(0, -base), min(p.ow, n-base)
				if lo < hi {
					prow := phases[(ph*p.h+iy)*pl : (ph*p.h+iy+1)*pl]
					taps(orow[lo:hi], prow[lo+base:], wrow[kx:kx+1], 0)
				}
			}
		}
	}
}

// convFloats returns t's values as float32 (a copy for FP16, BF16).
func convFloats(t *tensor.Tensor) ([]float32, bool) {
	switch d := t.Data.(type) {
	case []float32:
		return d, true
	case []tensor.F16:
		return tensor.HalfToFloat32(d), true
	case []tensor.BF16:
		return tensor.HalfToFloat32(d), true
	}
	return nil, false
}

// convResult wraps float32 values as a tensor of type dt (FP32, FP16 or
// BF16, rounded once).
func convResult(dt tensor.DataType, shape []int, v []float32) *tensor.Tensor {
	switch dt {
	case tensor.Float16:
		return &tensor.Tensor{DType: dt, Shape: shape, Data: tensor.Float32ToHalf[tensor.F16](v)}
	case tensor.BFloat16:
		return &tensor.Tensor{DType: dt, Shape: shape, Data: tensor.Float32ToHalf[tensor.BF16](v)}
	}
	return tensor.From(shape, v)
}

func convFloatType(dt tensor.DataType) bool {
	return dt == tensor.Float32 || dt == tensor.Float16 || dt == tensor.BFloat16 || dt == tensor.Float64
}

// convBias checks the optional bias against n channels and returns its
// values as float32 (nil when absent).
func convBias(op string, b *tensor.Tensor, dt tensor.DataType, n int) ([]float32, error) {
	if b == nil {
		return nil, nil
	}
	if b.DType != dt {
		return nil, inputErrorf("%s bias is %v, the input %v", op, b.DType, dt)
	}
	if b.Rank() != 1 || b.Shape[0] != n {
		return nil, inputErrorf("%s bias %s must be 1-D with %d values", op, tensor.ShapeString(b.Shape), n)
	}
	if dt == tensor.Float64 {
		return nil, nil
	}
	v, _ := convFloats(b)
	return v, nil
}

// holdConvWeight prepares a constant float weight of node n for the
// kernels and records a Layer for op. adjoint selects ConvTranspose's product.
func holdConvWeight(n *node, op string, w *tensor.Tensor, group int, adjoint bool) (*convHeld, error) {
	if !convFloatType(w.DType) || w.DType == tensor.Float64 || w.Rank() < 3 {
		return nil, nil // run per call, which checks and reports
	}
	shape := w.Shape
	for _, d := range shape {
		if d == 0 {
			return nil, nil
		}
	}
	if shape[0]%group != 0 {
		return nil, fmt.Errorf("weight %s: %d channels are not a multiple of group %d", tensor.ShapeString(shape), shape[0], group)
	}
	data, _ := convFloats(w)
	h := &convHeld{dtype: w.DType, shape: shape}
	m, cg, kk := shape[0], shape[1], convProd(shape[2:])
	k, nn := kk*cg, m/group
	layer := Layer{Node: n.name, Op: op, K: k, N: nn}
	if adjoint {
		layer.K, layer.N = nn, k
	}
	if !adjoint && cg == 1 && group > 1 && len(shape) <= 4 {
		h.dw = &depthwiseWeights{w: data}
		layer.Kernels = "depthwise float32"
		if dispatch.AutodiffBuilt {
			h.kernel = data
		}
	} else {
		quantize, kernels := convKernelsFor(n.opts, cg, layer.K, layer.N)
		if adjoint {
			quantize, kernels = convKernelsFor(n.opts, m/group, layer.K, layer.N)
		}
		var err error
		if h.w, err = prepareConvWeights(data, shape, group, adjoint, quantize, n.opts.Scheme); err != nil {
			return nil, fmt.Errorf("weight %q: %w", n.pb.Inputs[1], err)
		}
		layer.Kernels = kernels
		if dispatch.AutodiffBuilt {
			h.kernel = data
			if quantize {
				if h.kernel, err = dequantizedConvWeight(data, shape, group, adjoint, n.opts.Scheme); err != nil {
					return nil, err
				}
			}
		}
	}
	if group > 1 {
		layer.Kernels += fmt.Sprintf(", %d groups", group)
	}
	n.model.Layers = append(n.model.Layers, layer)
	// The kernels hold the weight from here on; builds with the autodiff
	// tag keep it in the trace for weight gradients.
	n.unused[1] = !dispatch.AutodiffBuilt
	return h, nil
}

func buildConv(n *node, at *ConvAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	if w := n.consts[1]; w != nil {
		if _, err := convShapes("Conv", append([]int{0, 0}, w.Shape[min(2, len(w.Shape)):]...), w.Shape, at.KernelShape); err != nil {
			return nil, err
		}
		var err error
		if at.held, err = holdConvWeight(n, n.pb.OpType, w, int(at.Group), false); err != nil {
			return nil, err
		}
	}
	exec, held := n.opts.Exec, at.held
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var b *tensor.Tensor
		if len(in) > 2 {
			b = in[2]
		}
		y, err := runConv(exec, at, held, x, in[1], b)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// runConv runs Conv on x with the held weight, or else w.
func runConv(e *gemm.Engine, at *ConvAttrs, held *convHeld, x, w, b *tensor.Tensor) (*tensor.Tensor, error) {
	var wShape []int
	var wType tensor.DataType
	switch {
	case held != nil:
		wShape, wType = held.shape, held.dtype
	case w == nil:
		return nil, inputErrorf("Conv has no weight")
	default:
		wShape, wType = w.Shape, w.DType
	}
	if !convFloatType(x.DType) {
		return nil, inputErrorf("Conv takes floating-point inputs, got %v", x.DType)
	}
	if x.DType != wType {
		return nil, inputErrorf("Conv input is %v, its weight %v", x.DType, wType)
	}
	g, err := at.Geometry(x.Shape, wShape)
	if err != nil {
		return nil, err
	}
	outShape := append([]int{g.Batch, g.M}, g.Out...)
	size, _ := tensor.NumElements(outShape)
	if x.DType == tensor.Float64 {
		if _, err := convBias("Conv", b, x.DType, g.M); err != nil {
			return nil, err
		}
		var bv []float64
		if b != nil {
			bv = b.Data.([]float64)
		}
		y := make([]float64, size)
		convDirect(g, x.Data.([]float64), w.Data.([]float64), bv, y)
		return tensor.From(outShape, y), nil
	}
	bias, err := convBias("Conv", b, x.DType, g.M)
	if err != nil {
		return nil, err
	}
	xv, _ := convFloats(x)
	y := make([]float32, size)
	switch {
	case held != nil && held.dw != nil:
		err = held.dw.forward(e, g, xv, bias, y)
	case held != nil:
		err = held.w.forward(e, g, xv, bias, y)
	case g.depthwise():
		wv, _ := convFloats(w)
		err = (&depthwiseWeights{w: wv}).forward(e, g, xv, bias, y)
	default:
		wv, _ := convFloats(w)
		cw, perr := prepareConvWeights(wv, wShape, g.Group, false, false, 0)
		if perr != nil {
			return nil, perr
		}
		err = cw.forward(e, g, xv, bias, y)
	}
	if err != nil {
		return nil, err
	}
	return convResult(x.DType, outShape, y), nil
}

func buildConvTranspose(n *node, at *ConvTransposeAttrs) (opFunc, error) {
	if err := n.checkArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := checkConvAttrs(at.AutoPad, at.Group, at.KernelShape, at.Strides, at.Dilations, at.Pads); err != nil {
		return nil, err
	}
	for _, v := range at.OutputPadding {
		if v < 0 || v > convMaxAttr {
			return nil, fmt.Errorf("output_padding %v: each value must lie in [0, 2^32]", at.OutputPadding)
		}
	}
	for _, v := range at.OutputShape {
		if v < 0 || v > convMaxAttr {
			return nil, fmt.Errorf("output_shape %v: each value must lie in [0, 2^32]", at.OutputShape)
		}
	}
	at.opset = n.opset
	if w := n.consts[1]; w != nil {
		if _, err := convShapes("ConvTranspose", append([]int{0, 0}, w.Shape[min(2, len(w.Shape)):]...), w.Shape, at.KernelShape); err != nil {
			return nil, err
		}
		var err error
		if at.held, err = holdConvWeight(n, n.pb.OpType, w, int(at.Group), true); err != nil {
			return nil, err
		}
	}
	exec, held := n.opts.Exec, at.held
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		var b *tensor.Tensor
		if len(in) > 2 {
			b = in[2]
		}
		y, err := runConvTranspose(exec, at, held, x, in[1], b)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func runConvTranspose(e *gemm.Engine, at *ConvTransposeAttrs, held *convHeld, x, w, b *tensor.Tensor) (*tensor.Tensor, error) {
	var wShape []int
	var wType tensor.DataType
	switch {
	case held != nil:
		wShape, wType = held.shape, held.dtype
	case w == nil:
		return nil, inputErrorf("ConvTranspose has no weight")
	default:
		wShape, wType = w.Shape, w.DType
	}
	if !convFloatType(x.DType) {
		return nil, inputErrorf("ConvTranspose takes floating-point inputs, got %v", x.DType)
	}
	if x.DType != wType {
		return nil, inputErrorf("ConvTranspose input is %v, its weight %v", x.DType, wType)
	}
	g, err := at.Geometry(x.Shape, wShape)
	if err != nil {
		return nil, err
	}
	outShape := append([]int{g.Batch, g.C}, g.In...)
	size, _ := tensor.NumElements(outShape)
	if x.DType == tensor.Float64 {
		if _, err := convBias("ConvTranspose", b, x.DType, g.C); err != nil {
			return nil, err
		}
		var bv []float64
		if b != nil {
			bv = b.Data.([]float64)
		}
		y := make([]float64, size)
		convAdjointDirect(g, x.Data.([]float64), w.Data.([]float64), bv, y)
		return tensor.From(outShape, y), nil
	}
	bias, err := convBias("ConvTranspose", b, x.DType, g.C)
	if err != nil {
		return nil, err
	}
	xv, _ := convFloats(x)
	y := make([]float32, size)
	cw := (*convWeights)(nil)
	if held != nil {
		cw = held.w
	} else {
		wv, _ := convFloats(w)
		if cw, err = prepareConvWeights(wv, wShape, g.Group, true, false, 0); err != nil {
			return nil, err
		}
	}
	if err := cw.adjoint(e, g, xv, bias, y); err != nil {
		return nil, err
	}
	return convResult(x.DType, outShape, y), nil
}

// convDirect is the defining loop of a convolution, for float64:
//
//	y[b][m][o] = bias[m] + Σ_{ci, k} x[b][g·Cg+ci][o·s − p + k·d] · w[m][ci][k]
func convDirect[T float32 | float64](g *ConvGeometry, x, w, bias, y []T) {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	taps := newConvTaps(g)
	for b := 0; b < g.Batch; b++ {
		for m := 0; m < g.M; m++ {
			gi := m / mg
			dst := y[(b*g.M+m)*outSize:][:outSize]
			pos := taps.pos(0)
			for o := range dst {
				var s T
				if bias != nil {
					s = bias[m]
				}
				for ci := 0; ci < cg; ci++ {
					plane := x[(b*g.C+gi*cg+ci)*inSize:][:inSize]
					wk := w[(m*cg+ci)*kk:][:kk]
					for kidx, wv := range wk {
						if at := pos.at(kidx); at >= 0 {
							s += plane[at] * wv
						}
					}
				}
				dst[o] = s
				if o+1 < len(dst) {
					pos.next()
				}
			}
		}
	}
}

// convAdjointDirect is the defining loop of ConvTranspose, for float64:
// every input value y[b][m][o] adds y·w[m][ci][k] to x[b][g·Cg+ci] at
// o·s − p + k·d.
func convAdjointDirect[T float32 | float64](g *ConvGeometry, y, w, bias, x []T) {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	for b := 0; b < g.Batch; b++ {
		for c := 0; c < g.C; c++ {
			dst := x[(b*g.C+c)*inSize:][:inSize]
			for i := range dst {
				dst[i] = 0
				if bias != nil {
					dst[i] = bias[c]
				}
			}
		}
	}
	if outSize == 0 {
		return
	}
	taps := newConvTaps(g)
	for b := 0; b < g.Batch; b++ {
		for m := 0; m < g.M; m++ {
			gi := m / mg
			src := y[(b*g.M+m)*outSize:][:outSize]
			pos := taps.pos(0)
			for o, v := range src {
				for ci := 0; ci < cg; ci++ {
					dst := x[(b*g.C+gi*cg+ci)*inSize:][:inSize]
					wk := w[(m*cg+ci)*kk:][:kk]
					for kidx, wv := range wk {
						if at := pos.at(kidx); at >= 0 {
							dst[at] += v * wv
						}
					}
				}
				if o+1 < len(src) {
					pos.next()
				}
			}
		}
	}
}

// The backward passes of Conv and ConvTranspose (builds with the autodiff
// tag) run through these on the float tiles of an engine: the one the
// convolution's node ran on (Step.Exec).

// ConvForward returns conv(x) by w (no bias) for geometry g on e: x is
// Batch×C×In, w is M×C/Group×Kernel, the result Batch×M×Out.
func ConvForward(e *gemm.Engine, g *ConvGeometry, x, w []float32) ([]float32, error) {
	if err := g.check(len(x), len(w), g.C*g.InSize(), "x"); err != nil {
		return nil, err
	}
	y := make([]float32, g.Batch*g.M*g.OutSize())
	if g.depthwise() {
		return y, (&depthwiseWeights{w: w}).forward(e, g, x, nil, y)
	}
	cw, err := prepareConvWeights(w, append([]int{g.M, g.cg()}, g.Kernel...), g.Group, false, false, 0)
	if err != nil {
		return nil, err
	}
	return y, cw.forward(e, g, x, nil, y)
}

// ConvAdjoint returns convᵀ(y) by w (no bias) for geometry g on e: y is
// Batch×M×Out, the result Batch×C×In. It is ConvTranspose, and the input
// gradient of a convolution.
func ConvAdjoint(e *gemm.Engine, g *ConvGeometry, y, w []float32) ([]float32, error) {
	if err := g.check(len(y), len(w), g.M*g.OutSize(), "y"); err != nil {
		return nil, err
	}
	x := make([]float32, g.Batch*g.C*g.InSize())
	cw, err := prepareConvWeights(w, append([]int{g.M, g.cg()}, g.Kernel...), g.Group, true, false, 0)
	if err != nil {
		return nil, err
	}
	return x, cw.adjoint(e, g, y, nil, x)
}

// ConvWeightGradient returns dW (M×C/Group×Kernel) = Σ_b Σ_o dy[b][m][o] ·
// x[b][ci][o·s − p + k·d] for geometry g: the weight gradient of a
// convolution whose output gradient is dy (Batch×M×Out) at input x
// (Batch×C×In). It gathers im2col rows a tile at a time, as the forward
// pass does, and accumulates dYᵀ·rows on e's float tiles.
func ConvWeightGradient(e *gemm.Engine, g *ConvGeometry, x, dy []float32) ([]float32, error) {
	inSize, outSize, kk := g.InSize(), g.OutSize(), g.KernelSize()
	cg, mg := g.cg(), g.mg()
	if len(x) != g.Batch*g.C*inSize || len(dy) != g.Batch*g.M*outSize {
		return nil, fmt.Errorf("model: ConvWeightGradient got %d and %d values for geometry %+v", len(x), len(dy), *g)
	}
	k := kk * cg
	dw := make([]float32, g.M*k)
	if g.Batch == 0 || outSize == 0 || k == 0 || g.M == 0 {
		return dw, nil
	}
	taps := newConvTaps(g)
	tile := convTileRows(k)
	xt := make([]float32, inSize*g.C)
	rows := make([]float32, tile*k)
	dyt := make([]float32, mg*tile)
	part := make([]float32, mg*k)
	sum := make([][]float64, g.Group)
	for gi := range sum {
		sum[gi] = make([]float64, mg*k)
	}
	for b := 0; b < g.Batch; b++ {
		convChannelsLast(e, xt, x[b*g.C*inSize:], g.C, inSize)
		for gi := 0; gi < g.Group; gi++ {
			for p0 := 0; p0 < outSize; p0 += tile {
				n := min(tile, outSize-p0)
				taps.gatherRows(rows, xt, gi, p0, n)
				for co := 0; co < mg; co++ {
					copy(dyt[co*n:(co+1)*n], dy[(b*g.M+gi*mg+co)*outSize+p0:])
				}
				if err := e.MatMul(dyt[:mg*n], mg, convPackF(n, k, rows[:n*k]), part); err != nil {
					return nil, err
				}
				for i, v := range part {
					sum[gi][i] += float64(v)
				}
			}
		}
	}
	// part rows are (co, kidx·Cg+ci); dW is (m, ci, kidx).
	for gi := 0; gi < g.Group; gi++ {
		for co := 0; co < mg; co++ {
			for kidx := 0; kidx < kk; kidx++ {
				for ci := 0; ci < cg; ci++ {
					dw[((gi*mg+co)*cg+ci)*kk+kidx] = float32(sum[gi][co*k+kidx*cg+ci])
				}
			}
		}
	}
	return dw, nil
}

func (g *ConvGeometry) check(nv, nw, per int, what string) error {
	if nv != g.Batch*per || nw != g.M*g.cg()*g.KernelSize() {
		return fmt.Errorf("model: convolution got %d values of %s and %d of w for geometry %+v", nv, what, nw, *g)
	}
	if g.Group < 1 || g.C%g.Group != 0 || g.M%g.Group != 0 {
		return fmt.Errorf("model: convolution geometry %+v has bad groups", *g)
	}
	return nil
}
