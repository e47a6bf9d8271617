package model

import (
	"math"
	"slices"
	"strings"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/tensor"
)

// Rewrites of convolutional networks, as ONNX Runtime's graph optimizer
// does them: a Conv with a constant float32 weight absorbs what follows it
// into one quantserve.FusedConv node (conv.FusedConv):
//
//	Mul → Conv                         a channel scale (squeeze-and-excitation)
//	                                   applied as the image is laid out
//	Conv → BatchNormalization          folded into the weights at load
//	     → Add or Sum with a residual  added as the product is written
//	     → an activation               applied as the product is written
//	     → Max or Min with a constant  bounded then, with the operator's bits
//	     → QuantizeDequantize          a static QDQ file's activation pair
//	                                   (the "qdq" rule's node), its bits
//
// each step optional but in that order (the activations: Relu, LeakyRelu,
// Clip, HardSigmoid, HardSwish, HardSwish as exporters spell it out,
// x·Clip(x + 3, 0, 6)/6, Sigmoid, Swish with alpha 1 and SiLU as
// exporters spell it out, x·Sigmoid(x), and in static QDQ files that with a pair after
// the convolution and after each of its steps, matchConvHardSwishQDQ).
// Then the layout rule lets fused convolutions hand their outputs to each
// other channels-last (NHWC), so no image is transposed between two
// convolutions, and to global pools (a squeeze-and-excitation block's
// squeeze), which then run as the rewrite domain's channels-last
// operators of their names; every value another operator or the caller
// reads stays in ONNX's NCHW.

func init() {
	registerRewrite("conv-fuse", fuseConvs)
	registerRewrite("conv-layout", layoutConvs)
}

// fusedConvType is the op type of the fused convolution.
const fusedConvType = conv.FusedConvType

// FusedConv input positions.
const (
	fusedX        = conv.FusedX
	fusedW        = conv.FusedW
	fusedB        = conv.FusedB
	fusedBNScale  = conv.FusedBNScale
	fusedBNBias   = conv.FusedBNBias
	fusedBNMean   = conv.FusedBNMean
	fusedBNVar    = conv.FusedBNVar
	fusedResidual = conv.FusedResidual
	fusedXScale   = conv.FusedXScale
	fusedInputs   = conv.FusedInputs
)

// fuseConvs replaces each Conv with a constant float32 weight and what it
// can absorb by one FusedConv node, placed where the last absorbed node
// was (every input of the pattern is computed by then).
func fuseConvs(r *rewriter) bool {
	changed := false
	cf := &constFinder{r: r, memo: map[string]constInfo{}}
	for i := 0; i < len(r.g.Nodes); i++ {
		c := r.g.Nodes[i]
		if !r.is(c, "Conv") || len(c.Inputs) < 2 || len(c.Inputs) > 3 || len(c.Outputs) != 1 || c.Inputs[0] == "" {
			continue
		}
		if dt, ok := cf.info(c.Inputs[1]); !ok || dt != tensor.Float32 {
			continue
		}
		inputs := make([]string, fusedInputs)
		inputs[fusedX], inputs[fusedW] = c.Inputs[0], c.Inputs[1]
		if len(c.Inputs) == 3 && c.Inputs[2] != "" {
			if dt, ok := cf.info(c.Inputs[2]); !ok || dt != tensor.Float32 {
				continue
			}
			inputs[fusedB] = c.Inputs[2]
		}
		attrs := slices.Clone(c.Attributes)
		var absorbed []*onnxpb.Node
		var parts []string
		if mul := r.prod[c.Inputs[0]]; r.isImageScale(mul) {
			// A squeeze-and-excitation block's channel scale.
			inputs[fusedX], inputs[fusedXScale] = mul.Inputs[0], mul.Inputs[1]
			absorbed, parts = append(absorbed, mul), append(parts, "Mul")
		}
		cur, last := c.Outputs[0], c
		if bn := r.onlyReader(cur); r.is(bn, "BatchNormalization") && foldableBN(r, bn, cf) {
			copy(inputs[fusedBNScale:fusedBNVar+1], bn.Inputs[1:5])
			if a := attrOf(bn, "epsilon"); a != nil {
				attrs = append(attrs, &onnxpb.Attribute{Name: "epsilon", Type: onnxpb.AttrFloat, F: a.F})
			}
			absorbed, parts = append(absorbed, bn), append(parts, "BatchNormalization")
			cur, last = bn.Outputs[0], bn
		}
		if add := r.onlyReader(cur); (r.is(add, "Add") && r.opset(add) >= 7 || r.is(add, "Sum") && r.opset(add) >= 8) &&
			len(add.Inputs) == 2 && len(add.Outputs) == 1 && add.Inputs[0] != add.Inputs[1] && len(add.Attributes) == 0 {
			if res := otherInput(add, cur); res != "" && !r.constantish(res) {
				inputs[fusedResidual] = res
				absorbed, parts = append(absorbed, add), append(parts, add.OpType)
				cur, last = add.Outputs[0], add
			}
		}
		if act, nodes := matchConvHardSwishQDQ(r, cur); act != nil {
			attrs = append(attrs, act...)
			absorbed, parts = append(absorbed, nodes...), append(parts, "HardSwishQDQ")
			last = nodes[len(nodes)-1]
		} else if act, nodes := matchConvActivation(r, cur); act != nil {
			attrs = append(attrs, act...)
			absorbed = append(absorbed, nodes...)
			parts = append(parts, nodes[0].OpType)
			if len(nodes) > 1 { // spelled out: named by the activation
				parts[len(parts)-1] = strings.TrimSuffix(string(act[0].S), "Parts")
			}
			last = nodes[len(nodes)-1]
		}
		if b, v, ok := matchConvBound(r, last.Outputs[0]); ok {
			attrs = append(attrs, &onnxpb.Attribute{Name: "bound", Type: onnxpb.AttrString, S: []byte(b.OpType)},
				&onnxpb.Attribute{Name: "bound_value", Type: onnxpb.AttrFloat, F: v})
			absorbed, parts = append(absorbed, b), append(parts, b.OpType)
			last = b
		}
		if q, n := matchConvQDQ(r, last.Outputs[0]); n != nil {
			attrs = append(attrs, q...)
			absorbed, parts = append(absorbed, n), append(parts, "QuantizeDequantize")
			last = n
		}
		if len(absorbed) == 0 {
			continue
		}
		for len(inputs) > 2 && inputs[len(inputs)-1] == "" {
			inputs = inputs[:len(inputs)-1]
		}
		attrs = append(attrs, &onnxpb.Attribute{Name: "fused", Type: onnxpb.AttrStrings, Strings: stringsToBytes(parts)})
		fused := &onnxpb.Node{Name: c.Name, OpType: fusedConvType, Domain: rewriteDomain, Inputs: inputs, Outputs: slices.Clone(last.Outputs), Attributes: attrs}
		at := slices.Index(r.g.Nodes, last)
		r.g.Nodes[at] = fused
		r.remove(c)
		for _, n := range absorbed {
			r.remove(n)
		}
		r.useDomain()
		changed = true
	}
	// A convolution fused before the "qdq" rule made the pair after it.
	for _, n := range r.g.Nodes {
		if r.dead[n] || !isFusedConv(n) || len(n.Outputs) != 1 || attrOf(n, "qdq_scales") != nil {
			continue
		}
		q, p := matchConvQDQ(r, n.Outputs[0])
		if p == nil {
			continue
		}
		attrs := append(withFused(n.Attributes, nil, []string{"QuantizeDequantize"}), q...)
		fused := &onnxpb.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Inputs: n.Inputs, Outputs: slices.Clone(p.Outputs), Attributes: attrs}
		r.g.Nodes[slices.Index(r.g.Nodes, p)] = fused
		r.remove(n)
		changed = true
	}
	if fuseInputPairs(r) {
		changed = true
	}
	return changed
}

// fuseInputPairs takes into a fused convolution the pair a static QDQ
// file writes between a squeeze-and-excitation block's channel scale
// and the convolution reading the scaled image,
//
//	y = FusedConv(QDQ(Mul(x, s)))
//
// (the pair, made by the "qdq" rule, read by the convolution alone; the
// Mul as the convolution rule takes it) as its input stage: x and s
// become its X and XScale, the pair its input_qdq_* (conv.FusedConv
// scales, then applies the pair, with the unfused steps' bits). It
// reports whether it fused any.
func fuseInputPairs(r *rewriter) bool {
	changed := false
	for i, n := range r.g.Nodes {
		if r.dead[n] || !isFusedConv(n) || len(n.Inputs) <= fusedX || n.Inputs[fusedX] == "" || len(n.Outputs) != 1 ||
			len(n.Inputs) > fusedXScale && n.Inputs[fusedXScale] != "" || attrOf(n, "input_qdq_scales") != nil {
			continue
		}
		q := r.prod[n.Inputs[fusedX]]
		if !isQDQ(r, q) || r.used[q.Outputs[0]] != 1 || slices.Index(n.Inputs, q.Outputs[0]) != fusedX {
			continue
		}
		p, ok := qdqPairOf(r, q)
		if !ok {
			continue
		}
		mul := r.prod[q.Inputs[0]]
		if !r.isImageScale(mul) {
			continue
		}
		inputs := slices.Clone(n.Inputs)
		for len(inputs) <= fusedXScale {
			inputs = append(inputs, "")
		}
		inputs[fusedX], inputs[fusedXScale] = mul.Inputs[0], mul.Inputs[1]
		attrs := append(withFused(n.Attributes, []string{"Mul", "QuantizeDequantize"}, nil), p.attributes("input_")...)
		r.g.Nodes[i] = &onnxpb.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Inputs: inputs, Outputs: n.Outputs, Attributes: attrs}
		r.remove(q)
		r.remove(mul)
		changed = true
	}
	return changed
}

// isImageScale reports whether mul is a Mul a convolution can take in as
// its input's channel scale: of two different values, neither constant
// (a squeeze-and-excitation block's image and scale, in either order:
// the shapes tell at run time), its product read once.
func (r *rewriter) isImageScale(mul *onnxpb.Node) bool {
	return r.is(mul, "Mul") && r.opset(mul) >= 7 && len(mul.Inputs) == 2 && len(mul.Outputs) == 1 && len(mul.Attributes) == 0 &&
		r.used[mul.Outputs[0]] == 1 && mul.Inputs[0] != mul.Inputs[1] && !r.constantish(mul.Inputs[0]) && !r.constantish(mul.Inputs[1])
}

// withFused returns a copy of a fused convolution's attributes whose
// "fused" list has before put first and after put last.
func withFused(attrs []*onnxpb.Attribute, before, after []string) []*onnxpb.Attribute {
	attrs = slices.Clone(attrs)
	for j, a := range attrs {
		if a.Name == "fused" {
			f := *a
			f.Strings = append(append(stringsToBytes(before), a.Strings...), stringsToBytes(after)...)
			attrs[j] = &f
		}
	}
	return attrs
}

func stringsToBytes(s []string) [][]byte {
	b := make([][]byte, len(s))
	for i, v := range s {
		b[i] = []byte(v)
	}
	return b
}

// constantish reports whether a value is an initializer or a Constant's
// output.
func (r *rewriter) constantish(name string) bool {
	_, init := r.inits[name]
	return init || r.is(r.prod[name], "Constant")
}

// foldableBN reports whether bn is an inference BatchNormalization over
// channels whose four parameters are float32 constants.
func foldableBN(r *rewriter, bn *onnxpb.Node, cf *constFinder) bool {
	if len(bn.Inputs) != 5 || len(bn.Outputs) < 1 || bn.Outputs[0] == "" {
		return false
	}
	for _, o := range bn.Outputs[1:] {
		if o != "" {
			return false // training statistics
		}
	}
	for _, a := range bn.Attributes {
		switch a.Name {
		case "epsilon", "momentum":
		case "spatial":
			if a.I != 1 {
				return false
			}
		case "training_mode":
			if a.I != 0 {
				return false
			}
		default:
			return false
		}
	}
	for _, in := range bn.Inputs[1:5] {
		if dt, ok := cf.info(in); !ok || dt != tensor.Float32 {
			return false
		}
	}
	return true
}

// twoReaders returns the nodes of types a and b that read x when x has
// two readers (a HardSwish written out, x·Clip(x + c, lo, hi) / d: an
// Add and a Mul; a SiLU, x·Sigmoid(x): a Sigmoid and a Mul); either is
// nil when no live reader of x is of its type.
func (r *rewriter) twoReaders(x, a, b string) (na, nb *onnxpb.Node) {
	if r.used[x] != 2 {
		return nil, nil
	}
	for _, n := range r.g.Nodes {
		if r.dead[n] || !slices.Contains(n.Inputs, x) {
			continue
		}
		switch {
		case r.is(n, a):
			na = n
		case r.is(n, b):
			nb = n
		}
	}
	return na, nb
}

// isSiLU reports whether sig and mul, x's two readers (twoReaders),
// compute x·Sigmoid(x), the sigmoid read by mul alone.
func (r *rewriter) isSiLU(x string, sig, mul *onnxpb.Node) bool {
	return len(sig.Inputs) == 1 && len(sig.Attributes) == 0 && len(sig.Outputs) == 1 && r.used[sig.Outputs[0]] == 1 &&
		r.opset(mul) >= 7 && len(mul.Attributes) == 0 && len(mul.Inputs) == 2 && len(mul.Outputs) == 1 &&
		(mul.Inputs[0] == x && mul.Inputs[1] == sig.Outputs[0] || mul.Inputs[1] == x && mul.Inputs[0] == sig.Outputs[0])
}

// matchConvActivation matches an activation reading value x (and nothing
// else reading x) and returns its attributes for FusedConv and the nodes
// it spans, or nil.
func matchConvActivation(r *rewriter, x string) ([]*onnxpb.Attribute, []*onnxpb.Node) {
	str := func(name, v string) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
	}
	floats := func(v ...float32) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: "activation_params", Type: onnxpb.AttrFloats, Floats: v}
	}
	onlyAttrs := func(n *onnxpb.Node, names ...string) bool {
		for _, a := range n.Attributes {
			if !slices.Contains(names, a.Name) {
				return false
			}
		}
		return true
	}
	if n := r.onlyReader(x); n != nil && len(n.Outputs) == 1 && n.Outputs[0] != "" && len(n.Inputs) >= 1 && n.Inputs[0] == x {
		switch {
		case r.is(n, "Relu") && len(n.Inputs) == 1 && len(n.Attributes) == 0:
			return []*onnxpb.Attribute{str("activation", "Relu")}, []*onnxpb.Node{n}
		case r.is(n, "LeakyRelu") && len(n.Inputs) == 1 && onlyAttrs(n, "alpha"):
			return []*onnxpb.Attribute{str("activation", "LeakyRelu"), floats(attrFloat(n, "alpha", 0.01))}, []*onnxpb.Node{n}
		case r.is(n, "HardSigmoid") && len(n.Inputs) == 1 && onlyAttrs(n, "alpha", "beta"):
			return []*onnxpb.Attribute{str("activation", "HardSigmoid"), floats(attrFloat(n, "alpha", 0.2), attrFloat(n, "beta", 0.5))}, []*onnxpb.Node{n}
		case r.is(n, "HardSwish") && len(n.Inputs) == 1 && len(n.Attributes) == 0:
			return []*onnxpb.Attribute{str("activation", "HardSwish")}, []*onnxpb.Node{n}
		case r.is(n, "Sigmoid") && len(n.Inputs) == 1 && len(n.Attributes) == 0:
			return []*onnxpb.Attribute{str("activation", "Sigmoid")}, []*onnxpb.Node{n}
		case r.is(n, "Swish") && len(n.Inputs) == 1 && onlyAttrs(n, "alpha") && attrFloat(n, "alpha", 1) == 1:
			return []*onnxpb.Attribute{str("activation", "Swish")}, []*onnxpb.Node{n}
		case r.is(n, "Clip"):
			if lo, hi, ok := clipBounds(r, n); ok {
				return []*onnxpb.Attribute{str("activation", "Clip"), floats(lo, hi)}, []*onnxpb.Node{n}
			}
		}
		return nil, nil
	}
	// x·Sigmoid(x) (SiLU, Swish with alpha 1): two nodes read x.
	if sig, mul := r.twoReaders(x, "Sigmoid", "Mul"); sig != nil && mul != nil {
		if !r.isSiLU(x, sig, mul) {
			return nil, nil
		}
		return []*onnxpb.Attribute{str("activation", "Swish")}, []*onnxpb.Node{sig, mul}
	}
	// x·Clip(x + c, lo, hi) / d (or · d): two nodes read x.
	add, mul := r.twoReaders(x, "Add", "Mul")
	if add == nil || mul == nil || r.opset(add) < 7 || len(add.Attributes) > 0 || len(add.Inputs) != 2 || len(add.Outputs) != 1 {
		return nil, nil
	}
	c, ok := r.scalarOther(add, x)
	if !ok {
		return nil, nil
	}
	clip := r.onlyReader(add.Outputs[0])
	if !r.is(clip, "Clip") || clip.Inputs[0] != add.Outputs[0] || len(clip.Outputs) != 1 {
		return nil, nil
	}
	lo, hi, ok := clipBounds(r, clip)
	if !ok || r.opset(mul) < 7 || len(mul.Attributes) > 0 || len(mul.Inputs) != 2 || len(mul.Outputs) != 1 {
		return nil, nil
	}
	if !(mul.Inputs[0] == x && mul.Inputs[1] == clip.Outputs[0] || mul.Inputs[1] == x && mul.Inputs[0] == clip.Outputs[0]) || r.used[clip.Outputs[0]] != 1 {
		return nil, nil
	}
	scale := r.onlyReader(mul.Outputs[0])
	var div float32
	switch {
	case r.is(scale, "Div") && scale.Inputs[0] == mul.Outputs[0]:
		div = 1
	case r.is(scale, "Mul"):
		div = 0
	default:
		return nil, nil
	}
	if r.opset(scale) < 7 || len(scale.Attributes) > 0 || len(scale.Inputs) != 2 || len(scale.Outputs) != 1 {
		return nil, nil
	}
	d, ok := r.scalarOther(scale, mul.Outputs[0])
	if !ok {
		return nil, nil
	}
	return []*onnxpb.Attribute{str("activation", "HardSwishParts"), floats(c, lo, hi, d, div)}, []*onnxpb.Node{add, clip, mul, scale}
}

// matchConvBound matches a Max or Min of value x (read by nothing else)
// and a float32 constant of one element c, which FusedConv applies after
// its activation with the operator's bits. A NaN c is left to the
// operator: which NaN it gives depends on the order of the operands.
// Before opset 8 Max and Min did not broadcast.
func matchConvBound(r *rewriter, x string) (*onnxpb.Node, float32, bool) {
	n := r.onlyReader(x)
	if !r.is(n, "Max") && !r.is(n, "Min") || r.opset(n) < 8 || len(n.Inputs) != 2 || len(n.Outputs) != 1 || n.Outputs[0] == "" || len(n.Attributes) > 0 {
		return nil, 0, false
	}
	c, ok := r.scalarOther(n, x)
	if !ok || c != c {
		return nil, 0, false
	}
	return n, c, true
}

// clipBounds returns a Clip node's bounds when they are constants (±Inf
// when absent).
func clipBounds(r *rewriter, n *onnxpb.Node) (lo, hi float32, ok bool) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	if r.opset(n) < 11 {
		if len(n.Inputs) != 1 {
			return 0, 0, false
		}
		for _, a := range n.Attributes {
			switch a.Name {
			case "min":
				lo = a.F
			case "max":
				hi = a.F
			default:
				return 0, 0, false
			}
		}
		return lo, hi, true
	}
	if len(n.Attributes) > 0 || len(n.Inputs) > 3 {
		return 0, 0, false
	}
	if len(n.Inputs) > 1 && n.Inputs[1] != "" {
		if lo, ok = r.outputScalar(n.Inputs[1]); !ok {
			return 0, 0, false
		}
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		if hi, ok = r.outputScalar(n.Inputs[2]); !ok {
			return 0, 0, false
		}
	}
	return lo, hi, true
}

// scalarOther returns the constant float32 scalar a binary node n combines
// with x.
func (r *rewriter) scalarOther(n *onnxpb.Node, x string) (float32, bool) {
	if o := otherInput(n, x); o != "" {
		return r.outputScalar(o)
	}
	return 0, false
}

// outputScalar returns the value of a float32 constant of one element whose
// rank is at most 3: broadcast against a convolution's output (rank 3 or
// more) it leaves the shape as it is, in either layout.
func (r *rewriter) outputScalar(name string) (float32, bool) { return r.constScalar(name, 3) }

// constScalar returns the value of a float32 constant of one element
// (an initializer or a Constant node) whose rank is at most maxRank.
func (r *rewriter) constScalar(name string, maxRank int) (float32, bool) {
	t := r.constant(name)
	if n := r.prod[name]; t == nil && r.is(n, "Constant") && len(n.Attributes) == 1 {
		a := n.Attributes[0]
		switch {
		case a.Name == "value_float":
			return a.F, true
		case a.Name == "value" && a.T != nil:
			var err error
			if t, err = TensorFromONNX(a.T); err != nil {
				return 0, false
			}
		}
	}
	if t == nil || t.DType != tensor.Float32 || t.Len() != 1 || t.Rank() > maxRank {
		return 0, false
	}
	return t.Data.([]float32)[0], true
}

// constFinder tells which values are constants at load and, where it can
// tell without computing them, their element type.
type constFinder struct {
	r    *rewriter
	memo map[string]constInfo
}

type constInfo struct {
	dt    tensor.DataType
	known bool // a constant of type dt
}

// info returns the type of a value known to be a constant at load, and
// false for values that are not or whose type it cannot tell.
func (cf *constFinder) info(name string) (tensor.DataType, bool) {
	if ci, ok := cf.memo[name]; ok {
		return ci.dt, ci.known
	}
	cf.memo[name] = constInfo{} // cycles are not constants
	ci := cf.find(name)
	cf.memo[name] = ci
	return ci.dt, ci.known
}

func (cf *constFinder) find(name string) constInfo {
	r := cf.r
	if p, ok := r.inits[name]; ok { // a constant even when listed as an input (IR < 4), as the compiler takes it
		dt, err := DataTypeFromONNX(p.DataType)
		return constInfo{dt, err == nil}
	}
	n := r.prod[name]
	if n == nil || r.dead[n] || normDomain(n.Domain) != "" {
		return constInfo{}
	}
	d, err := lookup("", n.OpType, r.opset(n))
	if err != nil || !d.Fold {
		return constInfo{}
	}
	for _, in := range n.Inputs {
		if in == "" {
			continue
		}
		if _, ok := cf.info(in); !ok {
			return constInfo{}
		}
	}
	typeOf := func(a *onnxpb.Attribute) constInfo {
		if a == nil || a.T == nil {
			return constInfo{}
		}
		dt, err := DataTypeFromONNX(a.T.DataType)
		return constInfo{dt, err == nil}
	}
	switch n.OpType {
	case "Constant":
		if len(n.Attributes) != 1 {
			return constInfo{}
		}
		switch a := n.Attributes[0]; a.Name {
		case "value":
			return typeOf(a)
		case "value_float", "value_floats":
			return constInfo{tensor.Float32, true}
		}
	case "ConstantOfShape":
		if a := attrOf(n, "value"); a != nil {
			return typeOf(a)
		}
		return constInfo{tensor.Float32, true}
	case "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten":
		if len(n.Inputs) > 0 && n.Inputs[0] != "" && n.Outputs[0] == name {
			if dt, ok := cf.info(n.Inputs[0]); ok {
				return constInfo{dt, true}
			}
		}
	case "Cast":
		if a := attrOf(n, "to"); a != nil && n.Outputs[0] == name {
			dt, err := DataTypeFromONNX(onnxpb.DataType(a.I))
			return constInfo{dt, err == nil}
		}
	}
	return constInfo{}
}

func isFusedConv(n *onnxpb.Node) bool {
	return n.OpType == fusedConvType && n.Domain == rewriteDomain
}

// fusedConvCanNHWC reports whether a fused convolution runs channels-last:
// one group, over the implicit GEMM, or a depthwise convolution of one
// output channel per input channel over one or two spatial axes (a
// constant weight [group, 1, kernel...]), on the channels-last depthwise
// kernel. Other grouped convolutions stay NCHW.
func (r *rewriter) fusedConvCanNHWC(n *onnxpb.Node) bool {
	group := fusedAttrInt(n, "group")
	if group <= 1 {
		return true
	}
	if len(n.Inputs) <= fusedW {
		return false
	}
	w := r.inits[n.Inputs[fusedW]]
	if c := r.prod[n.Inputs[fusedW]]; w == nil && r.is(c, "Constant") && len(c.Attributes) == 1 && c.Attributes[0].Name == "value" {
		w = c.Attributes[0].T // exporters' Constant nodes
	}
	if w == nil || w.DataType != onnxpb.Float {
		return false
	}
	d := w.Dims
	return (len(d) == 3 || len(d) == 4) && d[0] == group && d[1] == 1
}

// attrFloat returns n's float attribute name, or def when n has none.
func attrFloat(n *onnxpb.Node, name string, def float32) float32 {
	if a := attrOf(n, name); a != nil {
		return a.F
	}
	return def
}

func fusedAttrInt(n *onnxpb.Node, name string) int64 {
	if a := attrOf(n, name); a != nil {
		return a.I
	}
	return 0
}
