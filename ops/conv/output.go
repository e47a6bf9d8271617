package conv

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
)

// actKind is an activation a convolution's output stage applies.
type actKind uint8

const (
	actNone actKind = iota
	actRelu
	actLeakyRelu      // p[0] alpha
	actClip           // p[0] min, p[1] max
	actHardSigmoid    // p[0] alpha, p[1] beta
	actHardSwish      // x·HardSigmoid(x) with alpha 1/6, beta 1/2
	actHardSwishParts // (x·Clip(x + p[0], p[1], p[2])) / p[3] (· p[3] when p[4] is 0)
	actBound          // none: only the bound, or the fake quantization
	actHardSwishQDQ   // HardSwishParts through QDQ pairs hq (see tabulate)
	actSigmoid
	actSwish // x·Sigmoid(x) (SiLU)
)

// boundKind is a Max or Min with a constant folded after the activation.
type boundKind uint8

const (
	boundNone boundKind = iota
	boundMax            // y = max(y, c): a lower bound
	boundMin            // y = min(y, c): an upper bound
)

// activation is an activation with its parameters, then the bound of a
// folded Max or Min with the constant c, then a QuantizeLinear ->
// DequantizeLinear pair (fq, nil for none). rq is a pair the output
// stage applies before it adds the residual (nil for none): output.finish
// applies it, apply and rest do not.
type activation struct {
	kind  actKind
	p     [5]float32
	bound boundKind
	c     float32
	fq    *quant.FakeQuant
	hq    [3]*quant.FakeQuant // actHardSwishQDQ's pairs
	// lut is actHardSwishQDQ's output, with the bound and fq, for each
	// of hq[0]'s 256 outputs (see tabulate).
	lut *[256]float32
	rq  *quant.FakeQuant
}

func parseActivation(name string, params []float32) (activation, error) {
	kinds := map[string]struct {
		kind actKind
		n    int
	}{
		"": {actNone, 0}, "Relu": {actRelu, 0}, "LeakyRelu": {actLeakyRelu, 1}, "Clip": {actClip, 2},
		"HardSigmoid": {actHardSigmoid, 2}, "HardSwish": {actHardSwish, 0}, "HardSwishParts": {actHardSwishParts, 5},
		"HardSwishQDQ": {actHardSwishQDQ, 3}, "Sigmoid": {actSigmoid, 0}, "Swish": {actSwish, 0},
	}
	k, ok := kinds[name]
	if !ok {
		return activation{}, fmt.Errorf("activation %q is not one FusedConv applies", name)
	}
	if len(params) != k.n {
		return activation{}, fmt.Errorf("activation %s takes %d parameters, got %d", name, k.n, len(params))
	}
	a := activation{kind: k.kind}
	copy(a.p[:], params)
	return a, nil
}

// withBound returns a followed by op ("" for none, "Max" or "Min") with
// the constant c.
func (a activation) withBound(op string, c float32) (activation, error) {
	switch op {
	case "":
		return a, nil
	case "Max":
		a.bound = boundMax
	case "Min":
		a.bound = boundMin
	default:
		return activation{}, fmt.Errorf("bound %q is not one FusedConv applies (Max or Min)", op)
	}
	a.c = c
	if a.kind == actNone {
		a.kind = actBound
	}
	return a, nil
}

// newFakeQuant returns the pair of scales [quantize, dequantize] and
// zero points likewise (integers of typ, "uint8" or "int8").
func newFakeQuant(scales []float32, zps []int64, typ string) (*quant.FakeQuant, error) {
	var lo, hi int64
	switch typ {
	case "uint8":
		lo, hi = 0, math.MaxUint8
	case "int8":
		lo, hi = math.MinInt8, math.MaxInt8
	default:
		return nil, fmt.Errorf("qdq type %q is not one FusedConv applies (uint8 or int8)", typ)
	}
	if len(scales) != 2 || len(zps) != 2 {
		return nil, fmt.Errorf("a QDQ pair takes 2 scales and 2 zero points (quantize, dequantize), got %d and %d", len(scales), len(zps))
	}
	for _, z := range zps {
		if z < lo || z > hi {
			return nil, fmt.Errorf("qdq zero point %d is not a %s", z, typ)
		}
	}
	return quant.NewFakeQuant(scales[0], float64(zps[0]), scales[1], float64(zps[1]), typ == "int8"), nil
}

// withHardSwishQDQ gives HardSwishQDQ its three pairs: scales and zero
// points two by two, as newFakeQuant takes them, all of type typ. Other
// activations take none.
func (a activation) withHardSwishQDQ(scales []float32, zps []int64, typ string) (activation, error) {
	if a.kind != actHardSwishQDQ {
		if len(scales) != 0 || len(zps) != 0 || typ != "" {
			return activation{}, fmt.Errorf("activation_qdq_* go with activation HardSwishQDQ only")
		}
		return a, nil
	}
	if len(scales) != 6 || len(zps) != 6 {
		return activation{}, fmt.Errorf("HardSwishQDQ takes 3 pairs: 6 scales and 6 zero points, got %d and %d", len(scales), len(zps))
	}
	for i := range a.hq {
		var err error
		if a.hq[i], err = newFakeQuant(scales[2*i:2*i+2], zps[2*i:2*i+2], typ); err != nil {
			return activation{}, err
		}
	}
	return a, nil
}

// tabulate returns a ready to run: HardSwishQDQ with its bound and pair
// tabulated. Everything after its first pair is a function of that
// pair's output, one of 256 values, so each of them goes once through
// the steps as their nodes compute them,
//
//	a = hq[0](x);  b = hq[1](a + c);  m = hq[2](a · b);  y = m / d (m · d when p[2] is 0)
//
// (HardSwish as exporters spell it out, x·Clip(x + c, ...)/d or ·d, with
// a static QDQ file's pairs between the steps, the Clip the second
// pair's saturation), then the bound (kernels.MaxMinConst) and fq, and
// the stage is hq[0]'s quantization and a look-up (FakeQuant.ApplyTable):
// the same bits.
func (a activation) tabulate() activation {
	if a.kind != actHardSwishQDQ {
		return a
	}
	c, d, div := a.p[0], a.p[1], a.p[2] != 0
	lut := a.hq[0].Table()
	for i, x := range lut {
		b := a.hq[1].Value(float32(x + c))
		m := a.hq[2].Value(float32(x * b))
		y := []float32{float32(m * d)}
		if div {
			y[0] = float32(m / d)
		}
		if a.bound != boundNone {
			kernels.MaxMinConst(y, a.c, a.bound == boundMin)
		}
		if a.fq != nil {
			y[0] = a.fq.Value(y[0])
		}
		lut[i] = y[0]
	}
	a.lut = &lut
	return a
}

// withQDQ returns a followed by a per-tensor QuantizeLinear ->
// DequantizeLinear pair: scales [quantize, dequantize], zero points
// likewise (integers of typ), typ "uint8" or "int8". No scales: none.
func (a activation) withQDQ(scales []float32, zps []int64, typ string) (activation, error) {
	if noPair(scales, zps, typ) {
		return a, nil
	}
	fq, err := newFakeQuant(scales, zps, typ)
	if err != nil {
		return activation{}, err
	}
	a.fq = fq
	return a.bounded(), nil
}

// withResidualQDQ returns a with the pair applied before the residual is
// added: scales, zero points and typ as withQDQ takes them (none: no
// pair). A pair needs a residual.
func (a activation) withResidualQDQ(scales []float32, zps []int64, typ string, residual bool) (activation, error) {
	if noPair(scales, zps, typ) {
		return a, nil
	}
	if !residual {
		return activation{}, fmt.Errorf("residual_qdq_* go with a residual input")
	}
	fq, err := newFakeQuant(scales, zps, typ)
	if err != nil {
		return activation{}, err
	}
	a.rq = fq
	return a.bounded(), nil
}

// noPair reports whether scales, zero points and typ describe no pair.
func noPair(scales []float32, zps []int64, typ string) bool {
	return len(scales) == 0 && len(zps) == 0 && typ == ""
}

// bounded returns a, which holds a pair: with no activation, a bound (the
// kind that applies only the pairs and bounds).
func (a activation) bounded() activation {
	if a.kind == actNone {
		a.kind = actBound
	}
	return a
}

// clamp returns the bounds Relu and Clip clamp to (±Inf for the other
// activations) and whether apply has work left after clamping.
func (a *activation) clamp() (lo, hi float32, rest bool) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	switch a.kind {
	case actNone:
	case actRelu:
		lo = 0
	case actClip:
		lo, hi = a.p[0], a.p[1]
	default:
		rest = true
	}
	return lo, hi, rest || a.bound != boundNone || a.fq != nil
}

// apply computes v = act(v) in place, each activation as its operator
// computes it in float32, but for Relu and Clip, which clamp as
// kernels.ConvFinish does, and the HardSigmoid family, which clamps as
// kernels.ConvHard does (each keeps a negative zero and NaN where Go's max
// and min would give +0 and NaN: equal values all the same); those run on
// tb's kernels. Then the bound, as the Max or Min operator computes it
// (kernels.MaxMinConst: the same bits). Then the pair, as
// quantserve.QuantizeDequantize computes it (quant.FakeQuant).
func (a *activation) apply(v []float32, tb *dispatch.Table) {
	if a.kind == actRelu || a.kind == actClip {
		lo, hi, _ := a.clamp()
		tb.ConvFinish(v, nil, nil, lo, hi)
	}
	a.rest(v, tb)
}

// rest computes what the clamp of clamp() leaves of apply: the
// activations other than Relu and Clip, then the bound and the pair.
func (a *activation) rest(v []float32, tb *dispatch.Table) {
	hard := tb.ConvHard
	switch a.kind {
	case actLeakyRelu:
		tb.LeakyRelu(v, v, a.p[0])
	case actHardSigmoid:
		hard(v, a.p[0], a.p[1], 0, 1, 1, kernels.HardT)
	case actHardSwish:
		hard(v, 1.0/6, 0.5, 0, 1, 1, kernels.HardXT)
	case actHardSwishParts:
		c, lo, hi, d := a.p[0], a.p[1], a.p[2], a.p[3]
		if a.p[4] != 0 {
			hard(v, 1, c, lo, hi, d, kernels.HardXTDiv)
		} else {
			hard(v, 1, c, lo, hi, d, kernels.HardXTMul)
		}
	case actHardSwishQDQ: // with the bound and the pair
		a.hq[0].ApplyTable(v, v, a.lut, tb.FakeQuantKernels())
		return
	case actSigmoid:
		tb.Sigmoid(v, v)
	case actSwish:
		swish(v, tb)
	}
	if a.bound != boundNone {
		tb.MaxMinConst(v, a.c, a.bound == boundMin)
	}
	if a.fq != nil {
		a.fq.ApplyVector(v, v, tb.FakeQuantKernels())
	}
}

// swishChunk is how many values swish takes a sigmoid of at a time.
const swishChunk = 2048

// swish sets v[j] = v[j]·Sigmoid(v[j]), as the Mul of x and Sigmoid(x)
// computes it (tb.Sigmoid: the Sigmoid operator's bits), a chunk at a
// time through a pooled buffer.
func swish(v []float32, tb *dispatch.Table) {
	s := getBuf(min(len(v), swishChunk))
	defer putBuf(s)
	for len(v) > 0 {
		n := min(len(v), len(s))
		tb.Sigmoid(s[:n], v[:n])
		for j, e := range s[:n] {
			v[j] *= e
		}
		v = v[n:]
	}
}

// output finishes a convolution's product: y = act(product + bias +
// res) (act with its bound and pair), with x, y and res laid out as it
// says.
type output struct {
	bias                     []float32 // nil or M values
	res                      []float32 // nil, or a residual of y's size
	act                      activation
	nhwcIn, nhwcOut, nhwcRes bool            // the layouts of x, y and res
	pooled                   bool            // y in a pooled buffer (always when nhwcOut)
	xscale                   []float32       // nil, or x's scale per image and channel (x NCHW, or channels-last into a direct product, which scales its rows)
	biasRep                  []float32       // nil, or bias repeated for a tile's rows (tileBias)
	tb                       *dispatch.Table // the kernels that finish: the engine's
}

// tileBias returns the bias that finishes n rows of a one-group product
// in one pass (n adjacent rows of M channels): the bias repeated n times,
// or nil without one. ok is false when the rows must be finished one by
// one.
func (o *output) tileBias(g *Geometry, n int) (rep []float32, ok bool) {
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

// productFinish sets f to the finish a product applies to rows of
// a channels-last output as it writes them (gemm.Finish: the bias,
// the residual, a clamp: finishChunk's steps for such a stage) and
// reports whether the stage is no more than that. A stage with another
// activation, a bound or a QDQ pair is not, nor one without a bias, which
// finishChunk leaves out (a zero added would turn -0 into +0). f's Res
// and Bias are left for the caller to point at the tile's.
func (o *output) productFinish(f *gemm.Finish) bool {
	ok, rest := o.productFinishRest(f)
	return ok && !rest
}

// productFinishRest is productFinish for a stage that may go on after the
// clamp (another activation, a bound, a QDQ pair after them) or hold a
// pair before its residual: ok reports whether the product can apply f,
// and rest whether finishRest must then run on what it wrote, which
// together are finishChunk's steps. With a pair before the residual the
// product adds the bias alone (finishChunk's first step), and the
// residual comes in finishRest, after the pair: the caller gives f no
// residual then (residualLater). A stage without a bias cannot, nor one
// with an NCHW residual.
func (o *output) productFinishRest(f *gemm.Finish) (ok, rest bool) {
	lo, hi, rest := o.act.clamp()
	if o.bias == nil || o.res != nil && !o.nhwcRes {
		return false, false
	}
	if o.act.rq != nil {
		f.Lo, f.Hi = float32(math.Inf(-1)), float32(math.Inf(1))
		return true, true
	}
	f.Lo, f.Hi = lo, hi
	return true, rest
}

// residualLater reports whether finishRest, not the product, adds the
// residual (a pair before it).
func (o *output) residualLater() bool { return o.act.rq != nil }

// writesOverResidual reports whether a convolution of geometry g on held
// weights h may write its output (size values) over its residual, a
// pooled buffer of the output's layout and size: where an int8 product of
// channels-last tiles adds each tile's residual as it writes the tile
// (gemm.Finish, whose Res may be the output), so every value is read
// before it is written over, or, with a pair before the residual (added
// after the product), of one group, whose tiles are multiplied into a
// scratch tile and added to their residual rows in place (finishOver).
// The output's lines are then the ones the residual's
// read brought in, where a fresh buffer's, last written layers ago, came
// from memory: ResNet-50's int8 run 4-6% faster.
func (o *output) writesOverResidual(h *held, g *Geometry, size int) bool {
	if !o.pooled || len(o.res) != size || !o.nhwcOut || !o.nhwcRes || o.residualLater() && g.Group != 1 {
		return false
	}
	if h == nil || h.w == nil || h.w.q == nil || h.w.k == 0 || g.OutSize() == 1 {
		return false // float products, no input channels, one position (pointwise)
	}
	var fin gemm.Finish
	ok, _ := o.productFinishRest(&fin)
	return ok
}

// finishRest runs the steps of the stage the product left
// (productFinishRest) on dst: with a pair before the residual, afterBias
// (res as long as dst, nil for none); otherwise the steps after the clamp
// (activation.rest). qdqChunk values at a time, so that each chunk passes
// through every step in cache.
func (o *output) finishRest(dst, res []float32) {
	for at := 0; at < len(dst); at += qdqChunk {
		end := min(at+qdqChunk, len(dst))
		if o.act.rq == nil {
			o.act.rest(dst[at:end], o.tb)
			continue
		}
		var r []float32
		if res != nil {
			r = res[at:end]
		}
		o.afterBias(dst[at:end], r)
	}
}

// finishOver is finishRest with a pair before the residual for a tile
// whose output y holds its residual (the output written over it): sums,
// as long as y, are the product's values with their bias, which take the
// pair and are then added to y's values in place, with the clamp and the
// steps after it, as afterBias adds the residual to them (the same sum,
// its operands in the other order: the same bits, but for which NaN's
// payload a sum of two NaNs keeps). The residual is read where it is,
// not copied aside first.
func (o *output) finishOver(y, sums []float32) {
	lo, hi, rest := o.act.clamp()
	k := o.tb.FakeQuantKernels()
	for at := 0; at < len(y); at += qdqChunk {
		end := min(at+qdqChunk, len(y))
		d, t := y[at:end], sums[at:end]
		o.act.rq.ApplyVector(t, t, k)
		o.tb.ConvFinish(d, nil, t, lo, hi)
		if rest {
			o.act.rest(d, o.tb)
		}
	}
}

// afterBias runs a stage with a pair before its residual on dst, its bias
// added: the pair, the residual res (nil: none) with the clamp, then the
// steps after the clamp.
func (o *output) afterBias(dst, res []float32) {
	lo, hi, rest := o.act.clamp()
	o.act.rq.ApplyVector(dst, dst, o.tb.FakeQuantKernels())
	o.tb.ConvFinish(dst, nil, res, lo, hi)
	if rest {
		o.act.rest(dst, o.tb)
	}
}

// repeatBias returns bias repeated rows times.
func repeatBias(bias []float32, rows int) []float32 {
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
//
// With a QDQ pair it runs qdqChunk values at a time, each through every
// step while it is in cache.
func (o *output) finish(dst, bias, res []float32) {
	if o.act.rq == nil && o.act.fq == nil && o.act.kind != actHardSwishQDQ || len(dst) <= qdqChunk {
		o.finishChunk(dst, bias, res)
		return
	}
	for at := 0; at < len(dst); at += qdqChunk {
		end := min(at+qdqChunk, len(dst))
		var b, r []float32
		if bias != nil {
			b = bias[at:end]
		}
		if res != nil {
			r = res[at:end]
		}
		o.finishChunk(dst[at:end], b, r)
	}
}

// qdqChunk is how many values finish passes through its steps at once
// when it applies a QDQ pair.
const qdqChunk = 512

// qdqFinishCost is one value's cost of a finish with QDQ pairs (see
// ops.ScalarCost): a dozen vector passes.
const qdqFinishCost = 12 * ops.VectorCost

// quantizes reports whether the stage applies a QDQ pair.
func (a *activation) quantizes() bool {
	return a.fq != nil || a.rq != nil || a.kind == actHardSwishQDQ
}

// finishWhole finishes all of y, a product with its bias added, as finish
// does (o.res nil or laid out as y), split across the engine's cores.
func (o *output) finishWhole(c *ops.Context, y []float32) error {
	chunks := (len(y) + qdqChunk - 1) / qdqChunk
	return c.ParallelRows(chunks, qdqChunk*qdqFinishCost, func(lo, hi int) {
		a, b := lo*qdqChunk, min(hi*qdqChunk, len(y))
		var r []float32
		if o.res != nil {
			r = o.res[a:b]
		}
		o.finish(y[a:b], nil, r)
	})
}

// finishChunk is finish on one run of values.
func (o *output) finishChunk(dst, bias, res []float32) {
	if o.act.rq != nil { // the pair before the residual: (dst + bias) + res as two Adds
		inf := float32(math.Inf(1))
		o.tb.ConvFinish(dst, bias, nil, -inf, inf)
		o.afterBias(dst, res)
		return
	}
	lo, hi, rest := o.act.clamp()
	o.tb.ConvFinish(dst, bias, res, lo, hi)
	if rest {
		o.act.rest(dst, o.tb)
	}
}

// outAt is the index in the output of image b's channel m at position i.
func (o *output) outAt(g *Geometry, b, i, m int) int {
	if o.nhwcOut {
		return (b*g.OutSize()+i)*g.M + m
	}
	return (b*g.M+m)*g.OutSize() + i
}

// finishAll finishes all of y, a product of zero (no input channels).
func (o *output) finishAll(g *Geometry, y []float32) {
	outSize := g.OutSize()
	if o.act.rq != nil { // the bias, the pair, then the residual below
		for b := 0; b < g.Batch; b++ {
			for i := 0; i < outSize; i++ {
				for m := 0; m < g.M; m++ {
					if o.bias != nil {
						y[o.outAt(g, b, i, m)] += o.bias[m]
					}
				}
			}
		}
		o.act.rq.ApplyVector(y, y, o.tb.FakeQuantKernels())
	}
	for b := 0; b < g.Batch; b++ {
		for i := 0; i < outSize; i++ {
			for m := 0; m < g.M; m++ {
				at := o.outAt(g, b, i, m)
				v := y[at]
				if o.bias != nil && o.act.rq == nil {
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
