package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// toNHWC returns an NCHW tensor channels-last.
func toNHWC(t *tensor.Tensor) *tensor.Tensor {
	n, c := t.Shape[0], t.Shape[1]
	size := t.Len() / max(n*c, 1)
	src := t.Data.([]float32)
	dst := make([]float32, len(src))
	for b := 0; b < n; b++ {
		for ch := 0; ch < c; ch++ {
			for i := 0; i < size; i++ {
				dst[(b*size+i)*c+ch] = src[(b*c+ch)*size+i]
			}
		}
	}
	return tensor.From(nhwcShape(t.Shape), dst)
}

// refActivation is each FusedConv activation by its operator's
// definition, in float64.
func refActivation(name string, p []float32, v float64) float64 {
	hardSigmoid := func(x, alpha, beta float64) float64 { return math.Max(0, math.Min(1, alpha*x+beta)) }
	switch name {
	case "Relu":
		return math.Max(v, 0)
	case "LeakyRelu":
		if v < 0 {
			return v * float64(p[0])
		}
		return v
	case "Clip":
		return math.Min(math.Max(v, float64(p[0])), float64(p[1]))
	case "HardSigmoid":
		return hardSigmoid(v, float64(p[0]), float64(p[1]))
	case "HardSwish":
		return v * hardSigmoid(v, 1.0/6, 0.5)
	case "HardSwishParts":
		y := v * math.Min(math.Max(v+float64(p[0]), float64(p[1])), float64(p[2]))
		if p[4] != 0 {
			return y / float64(p[3])
		}
		return y * float64(p[3])
	}
	return v
}

// TestFusedConv runs FusedConv against its definition, Y = act(conv(X·s,
// W)·bn + R): every activation, with and without the folded
// BatchNormalization and the residual (of the output's shape, or one
// that broadcasts), the channel scale of a squeeze-and-excitation block,
// grouped and depthwise weights, channels-first and channels-last
// layouts, float32 and int8, on every table. It also checks what the
// node tells the compiler: the Conv it replaced among the layers, and
// the constant inputs it folded as held.
func TestFusedConv(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 31))
	const n, eps = 2, 1e-3
	acts := []struct {
		name string
		p    []float32
	}{
		{"", nil}, {"Relu", nil}, {"LeakyRelu", []float32{0.1}}, {"Clip", []float32{-0.5, 0.75}}, {"HardSigmoid", []float32{0.2, 0.5}},
		{"HardSwish", nil}, {"HardSwishParts", []float32{3, 0, 6, 6, 1}}, {"HardSwishParts", []float32{3, 0, 6, 1.0 / 6, 0}},
	}
	for _, c := range []struct {
		name        string
		c, m, group int
		bn, scaleX  bool
		res         string // "", "same", "broadcast"
		nhwc        bool
	}{
		{name: "bn relu", c: 16, m: 32, group: 1, bn: true},
		{name: "residual", c: 16, m: 16, group: 1, bn: true, res: "same"},
		{name: "channels-last", c: 16, m: 16, group: 1, bn: true, res: "same", nhwc: true},
		{name: "channels-last no residual", c: 8, m: 24, group: 1, nhwc: true},
		{name: "broadcast residual", c: 8, m: 16, group: 1, res: "broadcast"},
		{name: "channel scale", c: 16, m: 32, group: 1, scaleX: true, bn: true},
		{name: "grouped", c: 16, m: 32, group: 4, bn: true, res: "same"},
		{name: "grouped channels-last", c: 16, m: 32, group: 4, bn: true, res: "same", nhwc: true},
		{name: "depthwise", c: 16, m: 16, group: 16, bn: true, res: "same"},
		{name: "first conv", c: 3, m: 8, group: 1, bn: true, res: "same"},       // plane by plane
		{name: "first conv broadcast", c: 3, m: 16, group: 1, res: "broadcast"}, // plane by plane
		{name: "first conv scaled", c: 3, m: 8, group: 1, scaleX: true},         // a product
		{name: "first conv channels-last", c: 2, m: 8, group: 1, nhwc: true},    // a product
	} {
		xs, ws := []int{n, c.c, 9, 10}, []int{c.m, c.c / c.group, 3, 3}
		ys := []int{n, c.m, 9, 10}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		bnv := make([]*tensor.Tensor, 4)
		for i := range bnv {
			v := randomFloats(r, []int{c.m})
			if i == 3 { // var
				for j := range v {
					v[j] = v[j]*v[j] + 0.5
				}
			}
			bnv[i] = tensor.From([]int{c.m}, v)
		}
		var res *tensor.Tensor
		switch c.res {
		case "same":
			res = tensor.From(ys, randomFloats(r, ys))
		case "broadcast":
			res = tensor.From([]int{1, c.m, 1, 1}, randomFloats(r, []int{1, c.m, 1, 1}))
		}
		var scale *tensor.Tensor
		xin := x
		if c.scaleX {
			sv := randomFloats(r, []int{n, c.c, 1, 1})
			scale = tensor.From([]int{n, c.c, 1, 1}, sv)
			xv := slices.Clone(x.Data.([]float32))
			size := xs[2] * xs[3]
			for i := range xv {
				xv[i] *= sv[i/size]
			}
			xin = tensor.From(xs, xv) // what the convolution sees: as Mul computes it
		}
		ref := refConvolve(xin.Data.([]float32), xs, w.Data.([]float32), ws, b.Data.([]float32), c.group, []int{1, 1}, []int{1, 1}, []int{1, 1, 1, 1}, false)
		size := ys[2] * ys[3]
		for _, act := range acts {
			want := make([]float64, len(ref.y))
			for i, v := range ref.y {
				ch := i / size % c.m
				if c.bn {
					s := float64(bnv[0].Data.([]float32)[ch]) / math.Sqrt(float64(bnv[3].Data.([]float32)[ch])+eps)
					v = (v-float64(bnv[2].Data.([]float32)[ch]))*s + float64(bnv[1].Data.([]float32)[ch])
				}
				switch c.res {
				case "same":
					v += float64(res.Data.([]float32)[i])
				case "broadcast":
					v += float64(res.Data.([]float32)[ch])
				}
				want[i] = refActivation(act.name, act.p, v)
			}
			attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInt("group", int64(c.group)), opstest.AttrFloat("epsilon", eps)}
			if act.name != "" {
				attrs = append(attrs, opstest.AttrString("activation", act.name))
			}
			if act.p != nil {
				attrs = append(attrs, opstest.AttrFloats("activation_params", act.p...))
			}
			if c.nhwc {
				attrs = append(attrs, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1))
				if res != nil {
					attrs = append(attrs, opstest.AttrInt("nhwc_residual", 1))
				}
			}
			in := make([]*tensor.Tensor, FusedInputs)
			in[FusedX], in[FusedW], in[FusedB], in[FusedResidual], in[FusedXScale] = x, w, b, res, scale
			if c.nhwc {
				in[FusedX] = toNHWC(x)
				if res != nil {
					in[FusedResidual] = toNHWC(res)
				}
			}
			var absent []int
			for i, v := range in {
				if v == nil && (i < FusedBNScale || i > FusedBNVar || !c.bn) {
					absent = append(absent, i)
				}
			}
			consts := make([]*tensor.Tensor, FusedInputs)
			consts[FusedW], consts[FusedB] = w, b
			if c.bn {
				copy(consts[FusedBNScale:], bnv)
				copy(in[FusedBNScale:], bnv)
			}
			for _, e := range engines() {
				for _, q := range []bool{false, true} {
					name := fmt.Sprintf("%s %s %v %s int8=%v", c.name, act.name, act.p, engineName(e), q)
					cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs, consts: consts,
						absent: absent, engine: e, quantize: q, scheme: quant.PerChannel})
					if l := cp.layers(); len(l) != 1 || l[0][:5] != "Conv " {
						t.Fatalf("%s: layers %q, want the Conv it replaced", name, l)
					}
					if !slices.Equal(cp.host.held, []int{FusedW, FusedB, FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar}) {
						t.Fatalf("%s: holds %v", name, cp.host.held)
					}
					y, err := cp.run1(in...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if c.nhwc {
						if !slices.Equal(y.Shape, nhwcShape(ys)) {
							t.Fatalf("%s: shape %v", name, y.Shape)
						}
						y = toNCHW(y)
					}
					if !slices.Equal(y.Shape, ys) {
						t.Fatalf("%s: shape %v, want %v", name, y.Shape, ys)
					}
					for i, v := range y.Data.([]float32) {
						mag := ref.mag[i] * 4
						tol := 1e-5 * (mag + math.Abs(want[i]) + 1)
						if q && strings.Contains(cp.layers()[0], " int8") {
							tol = 0.05 * (mag + 1)
						}
						if !(math.Abs(float64(v)-want[i]) <= tol) {
							t.Fatalf("%s: y[%d] = %v, want %v ± %v", name, i, v, want[i], tol)
						}
					}
				}
			}
		}
	}
}

// TestFusedConvBadNodes: a FusedConv without a constant float32 weight,
// bias or BatchNormalization parameters, or with an activation it does
// not apply, is refused at load.
func TestFusedConvBadNodes(t *testing.T) {
	w := tensor.From([]int{2, 3, 3, 3}, make([]float32, 54))
	f64 := tensor.From([]int{2}, make([]float64, 2))
	one := tensor.From([]int{2}, []float32{1, 1})
	for _, c := range []struct {
		name   string
		attrs  []*onnxpb.Attribute
		consts []*tensor.Tensor
		inputs int
		absent []int
	}{
		{"no weight", nil, nil, 2, nil},
		{"weight rank", nil, []*tensor.Tensor{nil, tensor.From([]int{2, 3}, make([]float32, 6))}, 2, nil},
		{"bias type", nil, []*tensor.Tensor{nil, w, f64}, 3, nil},
		{"bias not constant", nil, []*tensor.Tensor{nil, w}, 3, nil},
		{"batch norm not constant", nil, []*tensor.Tensor{nil, w, nil, one, one, one}, 7, []int{FusedB}},
		{"batch norm channels", nil, []*tensor.Tensor{nil, w, nil, one, one, one, tensor.From([]int{3}, []float32{1, 1, 1})}, 7, []int{FusedB}},
		{"activation", []*onnxpb.Attribute{opstest.AttrString("activation", "Tanh")}, []*tensor.Tensor{nil, w}, 2, nil},
		{"activation parameters", []*onnxpb.Attribute{opstest.AttrString("activation", "Clip"), opstest.AttrFloats("activation_params", 1)}, []*tensor.Tensor{nil, w}, 2, nil},
		{"kernel_shape", []*onnxpb.Attribute{opstest.AttrInts("kernel_shape", 2, 2)}, []*tensor.Tensor{nil, w}, 2, nil},
		{"qdq type", qdqAttrs([]float32{0.1, 0.1}, []int64{0, 0}, "int16"), []*tensor.Tensor{nil, w}, 2, nil},
		{"qdq scales", qdqAttrs([]float32{0.1}, []int64{0, 0}, "uint8"), []*tensor.Tensor{nil, w}, 2, nil},
		{"qdq zero point", qdqAttrs([]float32{0.1, 0.1}, []int64{-1, 0}, "uint8"), []*tensor.Tensor{nil, w}, 2, nil},
		{"qdq without type", qdqAttrs([]float32{0.1, 0.1}, []int64{0, 0}, ""), []*tensor.Tensor{nil, w}, 2, nil},
		{"HardSwishQDQ without pairs", []*onnxpb.Attribute{opstest.AttrString("activation", "HardSwishQDQ"), opstest.AttrFloats("activation_params", 3, 6, 1)}, []*tensor.Tensor{nil, w}, 2, nil},
		{"HardSwishQDQ pairs", []*onnxpb.Attribute{opstest.AttrString("activation", "HardSwishQDQ"), opstest.AttrFloats("activation_params", 3, 6, 1),
			opstest.AttrFloats("activation_qdq_scales", 1, 1, 1, 1), opstest.AttrInts("activation_qdq_zero_points", 0, 0, 0, 0), opstest.AttrString("activation_qdq_type", "uint8")}, []*tensor.Tensor{nil, w}, 2, nil},
		{"pairs without HardSwishQDQ", []*onnxpb.Attribute{opstest.AttrString("activation", "Relu"), opstest.AttrFloats("activation_qdq_scales", 1, 1)}, []*tensor.Tensor{nil, w}, 2, nil},
	} {
		if _, err := compile(spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: c.attrs, inputs: c.inputs, consts: c.consts, absent: c.absent}); err == nil {
			t.Errorf("%s: built", c.name)
		}
	}
}

// qdqAttrs are FusedConv's attributes of a QuantizeLinear ->
// DequantizeLinear pair.
func qdqAttrs(scales []float32, zps []int64, typ string) []*onnxpb.Attribute {
	a := []*onnxpb.Attribute{opstest.AttrFloats("qdq_scales", scales...), opstest.AttrInts("qdq_zero_points", zps...)}
	if typ != "" {
		a = append(a, opstest.AttrString("qdq_type", typ))
	}
	return a
}

// TestFusedConvQDQ: a FusedConv with a pair (qdq_scales, ...) gives the
// same node's output without it through quant.FakeQuant (the arithmetic
// of quantserve.QuantizeDequantize, which its tests hold to the two ONNX
// operators) bit for bit: with and without an activation and a residual
// (of the output's shape, or one that broadcasts), grouped, depthwise,
// plane by plane and channels-last, through UINT8 and INT8, float32 and
// int8, on every table.
func TestFusedConvQDQ(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	const n = 2
	for _, c := range []struct {
		name        string
		c, m, group int
		act, res    string
		nhwc        bool
	}{
		{name: "plain", c: 16, m: 32, group: 1},
		{name: "relu residual", c: 16, m: 16, group: 1, act: "Relu", res: "same"},
		{name: "channels-last", c: 16, m: 16, group: 1, res: "same", nhwc: true},
		{name: "broadcast residual", c: 8, m: 16, group: 1, act: "Relu", res: "broadcast"},
		{name: "grouped", c: 16, m: 32, group: 4},
		{name: "depthwise", c: 16, m: 16, group: 16},
		{name: "depthwise relu", c: 16, m: 16, group: 16, act: "Relu"},
		{name: "first conv", c: 3, m: 8, group: 1},
	} {
		xs, ws, ys := []int{n, c.c, 9, 10}, []int{c.m, c.c / c.group, 3, 3}, []int{n, c.m, 9, 10}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		var res *tensor.Tensor
		switch c.res {
		case "same":
			res = tensor.From(ys, randomFloats(r, ys))
		case "broadcast":
			res = tensor.From([]int{1, c.m, 1, 1}, randomFloats(r, []int{1, c.m, 1, 1}))
		}
		attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInt("group", int64(c.group))}
		if c.act != "" {
			attrs = append(attrs, opstest.AttrString("activation", c.act))
		}
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedW], in[FusedB], in[FusedResidual] = x, w, b, res
		if c.nhwc {
			attrs = append(attrs, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1), opstest.AttrInt("nhwc_residual", 1))
			in[FusedX], in[FusedResidual] = toNHWC(x), toNHWC(res)
		}
		absent := absentInputs(in)
		consts := make([]*tensor.Tensor, FusedInputs)
		consts[FusedW], consts[FusedB] = w, b
		for _, p := range []struct {
			typ    string
			scales []float32
			zps    []int64
			signed bool
		}{
			{"uint8", []float32{0.05, 0.05}, []int64{128, 128}, false},
			{"uint8", []float32{0.03, 0.031}, []int64{0, 3}, false},
			{"int8", []float32{0.04, 0.04}, []int64{-3, -3}, true},
		} {
			fq := quant.NewFakeQuant(p.scales[0], float64(p.zps[0]), p.scales[1], float64(p.zps[1]), p.signed)
			for _, e := range engines() {
				for _, q := range []bool{false, true} {
					name := fmt.Sprintf("%s %s %v %s int8=%v", c.name, p.typ, p.scales, engineName(e), q)
					run := func(attrs []*onnxpb.Attribute) *tensor.Tensor {
						cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs, consts: consts,
							absent: absent, engine: e, quantize: q, scheme: quant.PerChannel})
						y, err := cp.run1(in...)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						return y
					}
					plain := run(attrs)
					got := run(append(slices.Clone(attrs), qdqAttrs(p.scales, p.zps, p.typ)...))
					if !slices.Equal(got.Shape, plain.Shape) {
						t.Fatalf("%s: shape %v, without the pair %v", name, got.Shape, plain.Shape)
					}
					want := slices.Clone(plain.Data.([]float32))
					fq.Apply(want, want)
					levels := map[float32]bool{}
					for i, v := range got.Data.([]float32) {
						if math.Float32bits(v) != math.Float32bits(want[i]) {
							t.Fatalf("%s: y[%d] = %v, want %v (%v before the pair)", name, i, v, want[i], plain.Data.([]float32)[i])
						}
						levels[v] = true
					}
					if len(levels) < 8 {
						t.Fatalf("%s: %d distinct levels: too few to compare", name, len(levels))
					}
				}
			}
		}
	}
}
