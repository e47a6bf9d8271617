package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvInputPair: a fused convolution with an input pair
// (input_qdq_*) gives, bit for bit, what the unfused steps give: the
// image times its channel scale (Mul, either operand first), the pair
// applied (QuantizeLinear -> DequantizeLinear), then the convolution
// without the pair, in either layout, with float32 and int8 weights, on
// every table at one and two threads; a NaN in the image stays where
// the steps put it. Without a scale, the pair applies to the image.
func TestFusedConvInputPair(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	const n, c, m, h, w = 2, 24, 16, 7, 9
	pairAttrs := func(qs, ds float32, qz, dz int64, typ string) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{opstest.AttrFloats("input_qdq_scales", qs, ds), opstest.AttrInts("input_qdq_zero_points", qz, dz),
			opstest.AttrString("input_qdq_type", typ)}
	}
	for _, tc := range []struct {
		name      string
		kernel    int
		scale     []int // the channel scale's shape; nil: none
		scaleLast bool
		nhwc      bool
		typ       string
		zp        int64
		nan       bool
	}{
		{"1x1 nhwc", 1, []int{n, c, 1, 1}, true, true, "uint8", 7, false},
		{"1x1 nhwc scale first", 1, []int{1, c, 1, 1}, false, true, "uint8", 0, false},
		{"1x1 nchw", 1, []int{n, c, 1, 1}, true, false, "int8", -3, false},
		{"3x3 nhwc", 3, []int{n, c, 1, 1}, true, true, "uint8", 130, false},
		{"3x3 nchw", 3, []int{n, c, 1, 1}, false, false, "uint8", 12, false},
		{"no scale nhwc", 1, nil, true, true, "int8", 5, false},
		{"no scale nchw", 3, nil, true, false, "uint8", 9, false},
		{"nan", 1, []int{n, c, 1, 1}, true, true, "uint8", 7, true},
	} {
		x := tensor.From([]int{n, c, h, w}, randomFloats(r, []int{n, c, h, w}))
		if tc.nan {
			x.Data.([]float32)[37] = float32(math.NaN())
		}
		var s *tensor.Tensor
		if tc.scale != nil {
			s = tensor.From(tc.scale, randomFloats(r, tc.scale))
		}
		wt := tensor.From([]int{m, c, tc.kernel, tc.kernel}, randomFloats(r, []int{m, c, tc.kernel, tc.kernel}))
		b := tensor.From([]int{m}, randomFloats(r, []int{m}))
		qs, ds := float32(0.0371), float32(0.0371)
		// The steps as written: Mul, then the pair (its scalar form, the
		// pair's definition), in NCHW.
		scaled := x
		if s != nil {
			ops := []*tensor.Tensor{x, s}
			if !tc.scaleLast {
				ops[0], ops[1] = s, x
			}
			out, err := opstest.Run(t, opstest.Node{Op: "Mul", Opset: 14}, ops...)
			if err != nil {
				t.Fatal(err)
			}
			scaled = out[0]
		}
		pv := make([]float32, scaled.Len())
		quant.NewFakeQuant(qs, float64(tc.zp), ds, float64(tc.zp), tc.typ == "int8").Apply(pv, scaled.Data.([]float32))
		paired := tensor.From(scaled.Shape, pv)
		base := []*onnxpb.Attribute{opstest.AttrInt("group", 1)}
		if tc.kernel == 3 {
			base = append(base, opstest.AttrInts("pads", 1, 1, 1, 1))
		}
		img, pimg := x, paired
		if tc.nhwc {
			base = append(base, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1))
			img, pimg = toNHWC(x), toNHWC(paired)
		}
		consts := []*tensor.Tensor{FusedW: wt, FusedB: b}
		plain := []*tensor.Tensor{FusedX: pimg, FusedW: wt, FusedB: b}
		in := []*tensor.Tensor{FusedX: img, FusedW: wt, FusedB: b}
		if s != nil {
			in = make([]*tensor.Tensor, FusedInputs)
			in[FusedX], in[FusedW], in[FusedB], in[FusedXScale] = img, wt, b, s
			if !tc.scaleLast && !tc.nhwc { // the Mul's operands as written
				in[FusedX], in[FusedXScale] = s, img
			}
		}
		for _, q := range []bool{false, true} {
			for _, e := range engines() {
				name := fmt.Sprintf("%s int8=%v %s", tc.name, q, engineName(e))
				ref := spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: base, inputs: len(plain), consts: consts,
					absent: absentInputs(plain), engine: e, quantize: q, scheme: quant.PerChannel}
				want, err := mustCompile(t, ref).run1(plain...)
				if err != nil {
					t.Fatalf("%s: the unfused convolution: %v", name, err)
				}
				sp := ref
				sp.attrs = append(append([]*onnxpb.Attribute(nil), base...), pairAttrs(qs, ds, tc.zp, tc.zp, tc.typ)...)
				sp.inputs, sp.absent = len(in), absentInputs(in)
				got, err := mustCompile(t, sp).run1(in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				gv, wv := got.Data.([]float32), want.Data.([]float32)
				if len(gv) != len(wv) {
					t.Fatalf("%s: %d values, the steps give %d", name, len(gv), len(wv))
				}
				for i := range wv {
					if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) && !(gv[i] != gv[i] && wv[i] != wv[i]) {
						t.Fatalf("%s: y[%d] = %v, the unfused steps give %v", name, i, gv[i], wv[i])
					}
				}
			}
		}
		// The caller's image is not written.
		if tc.nan && !math.IsNaN(float64(x.Data.([]float32)[37])) {
			t.Fatalf("%s: the image changed", tc.name)
		}
	}
}

// TestFusedConvInputPairRefused: input pairs FusedConv cannot apply are
// refused at load.
func TestFusedConvInputPairRefused(t *testing.T) {
	w := tensor.From([]int{2, 3, 1, 1}, make([]float32, 6))
	for _, c := range []struct {
		name   string
		scales []float32
		zps    []int64
		typ    string
	}{
		{"one scale", []float32{0.1}, []int64{3, 3}, "uint8"},
		{"type", []float32{0.1, 0.1}, []int64{3, 3}, "int16"},
		{"zero point", []float32{0.1, 0.1}, []int64{3, 300}, "uint8"},
		{"no type", []float32{0.1, 0.1}, []int64{3, 3}, ""},
	} {
		attrs := []*onnxpb.Attribute{opstest.AttrFloats("input_qdq_scales", c.scales...), opstest.AttrInts("input_qdq_zero_points", c.zps...),
			opstest.AttrString("input_qdq_type", c.typ)}
		if _, err := compile(spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: 2, consts: []*tensor.Tensor{nil, w}}); err == nil {
			t.Errorf("%s: built", c.name)
		}
	}
}
