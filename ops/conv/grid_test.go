package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// gridImage returns an image of the given shape whose values lie on the
// grid of a pair with dequantize scale s and zero point zp through typ:
// float32(q − zp)·s for integers q of the type.
func gridImage(r *rand.Rand, shape []int, s float32, zp int64, typ string) *tensor.Tensor {
	lo, hi := int64(0), int64(255)
	if typ == "int8" {
		lo, hi = -128, 127
	}
	v := make([]float32, ops.ProdInts(shape))
	for i := range v {
		q := lo + r.Int64N(hi-lo+1)
		if i%5 == 0 {
			q = zp // zeros, as after a Relu
		}
		v[i] = float32(q-zp) * s
	}
	return tensor.From(shape, v)
}

// exactWeights returns a weight whose per-channel int8 quantization is
// exact: output channel co's values are integers in [-127, 127] (127
// among them) times a scale of its own.
func exactWeights(r *rand.Rand, shape []int) *tensor.Tensor {
	per := ops.ProdInts(shape[1:])
	v := make([]float32, shape[0]*per)
	for co := 0; co < shape[0]; co++ {
		s := float32(0.001 + 0.01*r.Float64())
		for i := range per {
			k := r.IntN(255) - 127
			if i == co%per {
				k = 127
			}
			v[co*per+i] = float32(k) * s
		}
	}
	return tensor.From(shape, v)
}

// TestFusedConvGrid: a fused convolution whose input lies on a pair's
// grid (grid_*) takes the pair's bytes as its int8 activations: with
// weights whose int8 form is exact, its output is the convolution's
// definition within float32 rounding (per-row quantizing would be off by
// a fraction of a quantization step of every activation), on every table
// at one and two threads with the same bits, through each way its rows
// are made (the image's pixels as rows, rows gathered from the image
// quantized once, rows quantized as they are read), in either layout and
// behind an input pair; the layer says so.
func TestFusedConvGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	const n, c, m = 2, 64, 160
	for _, tc := range []struct {
		name          string
		kernel, pad   int
		stride, group int
		nhwc          bool
		typ           string
		zp            int64
		pair          bool // behind an input pair of the same grid
	}{
		{"1x1 nhwc", 1, 0, 1, 1, true, "uint8", 0, false},
		{"3x3 nhwc", 3, 1, 1, 1, true, "uint8", 7, false},
		{"3x3 nhwc int8", 3, 1, 1, 1, true, "int8", -3, false},
		{"3x3 stride 2 nhwc", 3, 1, 2, 1, true, "uint8", 0, false},
		{"1x1 stride 2 nhwc", 1, 0, 2, 1, true, "uint8", 200, false},
		{"3x3 nchw groups", 3, 1, 1, 2, false, "uint8", 11, false},
		{"1x1 nhwc pair", 1, 0, 1, 1, true, "uint8", 4, true},
	} {
		const s = float32(0.0213)
		x := gridImage(r, []int{n, c, 9, 11}, s, tc.zp, tc.typ)
		wt := exactWeights(r, []int{m, c / tc.group, tc.kernel, tc.kernel})
		b := tensor.From([]int{m}, randomFloats(r, []int{m}))
		attrs := []*onnxpb.Attribute{opstest.AttrInt("group", int64(tc.group)),
			opstest.AttrInts("pads", int64(tc.pad), int64(tc.pad), int64(tc.pad), int64(tc.pad)),
			opstest.AttrInts("strides", int64(tc.stride), int64(tc.stride)),
			opstest.AttrFloats("grid_scale", s), opstest.AttrInts("grid_zero_point", tc.zp), opstest.AttrString("grid_type", tc.typ)}
		if tc.pair {
			attrs = append(attrs, opstest.AttrFloats("input_qdq_scales", s, s), opstest.AttrInts("input_qdq_zero_points", tc.zp, tc.zp),
				opstest.AttrString("input_qdq_type", tc.typ))
		}
		img := x
		if tc.nhwc {
			attrs = append(attrs, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1))
			img = toNHWC(x)
		}
		st := []int{tc.stride, tc.stride}
		ref := refConvolve(x.Data.([]float32), x.Shape, wt.Data.([]float32), wt.Shape, b.Data.([]float32), tc.group, st, []int{1, 1},
			[]int{tc.pad, tc.pad, tc.pad, tc.pad}, false)
		var first []float32
		for _, e := range engines() {
			name := fmt.Sprintf("%s %s", tc.name, engineName(e))
			sp := spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: 3, consts: []*tensor.Tensor{nil, wt, b},
				engine: e, quantize: true, scheme: quant.PerChannel}
			cp := mustCompile(t, sp)
			if l := cp.layers(); len(l) != 1 || !strings.Contains(l[0], "int8 per_channel (QDQ activations)") {
				t.Fatalf("%s: layers %q", name, l)
			}
			got, err := cp.run1(img, wt, b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if tc.nhwc {
				got = toNCHW(got)
			}
			gv := got.Data.([]float32)
			if len(gv) != len(ref.y) {
				t.Fatalf("%s: %d values, want %d", name, len(gv), len(ref.y))
			}
			for i, want := range ref.y {
				if d := math.Abs(float64(gv[i]) - want); d > 1e-5*(ref.mag[i]+1) {
					t.Fatalf("%s: y[%d] = %v, the definition %v (off by %.3g, Σ|x·w| %.3g)", name, i, gv[i], want, d, ref.mag[i])
				}
			}
			if first == nil {
				first = gv
			}
			for i := range gv {
				if math.Float32bits(gv[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%s: y[%d] = %v, the first table's %v", name, i, gv[i], first[i])
				}
			}
		}
	}
}

// TestFusedConvGridRefused: grids FusedConv cannot take are refused at
// load; float32 weights ignore a grid, and per-block weights quantize
// their activations per row.
func TestFusedConvGridRefused(t *testing.T) {
	w := tensor.From([]int{128, 128, 1, 1}, make([]float32, 128*128))
	for _, c := range []struct {
		name   string
		scales []float32
		zps    []int64
		typ    string
	}{
		{"no type", []float32{0.1}, []int64{3}, ""},
		{"int16", []float32{0.1}, []int64{3}, "int16"},
		{"two scales", []float32{0.1, 0.2}, []int64{3}, "uint8"},
		{"no zero point", []float32{0.1}, nil, "uint8"},
		{"zero point past uint8", []float32{0.1}, []int64{256}, "uint8"},
		{"zero point past int8", []float32{0.1}, []int64{-129}, "int8"},
		{"zero scale", []float32{0}, []int64{0}, "uint8"},
		{"NaN scale", []float32{float32(math.NaN())}, []int64{0}, "uint8"},
	} {
		attrs := []*onnxpb.Attribute{opstest.AttrFloats("grid_scale", c.scales...), opstest.AttrInts("grid_zero_point", c.zps...),
			opstest.AttrString("grid_type", c.typ)}
		if _, err := compile(spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: 2,
			consts: []*tensor.Tensor{nil, w}, quantize: true, scheme: quant.PerChannel}); err == nil {
			t.Errorf("%s: compiled", c.name)
		}
	}
	attrs := []*onnxpb.Attribute{opstest.AttrFloats("grid_scale", 0.1), opstest.AttrInts("grid_zero_point", 0), opstest.AttrString("grid_type", "uint8")}
	for _, c := range []struct {
		quantize bool
		scheme   quant.Scheme
		want     string
	}{{false, quant.PerChannel, "float32"}, {true, quant.PerBlock, "int8 per_block"}} {
		cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: 2,
			consts: []*tensor.Tensor{nil, w}, quantize: c.quantize, scheme: c.scheme})
		if l := cp.layers(); len(l) != 1 || l[0] != "Conv 128×128 "+c.want {
			t.Errorf("quantize %v %v: layers %q, want %q", c.quantize, c.scheme, l, c.want)
		}
	}
}
