package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvSegments runs float32 fused convolutions that write
// channels-last, which multiply their padded image in place
// (forwardSegments), against Conv's definition: unit strides (tiles over
// the padded grid, the pixels past each row dropped), other strides (a
// row a tile), a ResNet stem of three channels, dilations along either
// axis, uneven pads, a residual with Relu, a squeeze-and-excitation
// scale of a channels-last image and an NCHW one, on every table with
// one thread and two.
func TestFusedConvSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 43))
	for _, c := range []struct { // output rows of minSegmentRow pixels or more
		name                  string
		x                     []int // N, C, H, W
		m, kh, kw             int
		strides, dil, pads    []int
		res, scale, nchwInput bool
	}{
		{name: "3x3", x: []int{2, 16, 5, 30}, m: 24, kh: 3, kw: 3, strides: []int{1, 1}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}, res: true},
		{name: "3x3 wide", x: []int{1, 64, 12, 30}, m: 64, kh: 3, kw: 3, strides: []int{1, 1}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}},
		{name: "3x3 stride 2", x: []int{2, 8, 5, 60}, m: 40, kh: 3, kw: 3, strides: []int{2, 2}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}, res: true},
		{name: "stem", x: []int{1, 3, 20, 64}, m: 16, kh: 7, kw: 7, strides: []int{2, 2}, dil: []int{1, 1}, pads: []int{3, 3, 3, 3}},
		{name: "dilated", x: []int{1, 8, 9, 33}, m: 16, kh: 3, kw: 3, strides: []int{1, 1}, dil: []int{2, 3}, pads: []int{2, 3, 1, 0}},
		{name: "dilated rows, stride 3", x: []int{2, 5, 14, 29}, m: 8, kh: 2, kw: 3, strides: []int{3, 1}, dil: []int{3, 1}, pads: []int{0, 2, 1, 2}},
		{name: "uneven, no pads", x: []int{1, 12, 7, 36}, m: 20, kh: 1, kw: 5, strides: []int{1, 1}, dil: []int{1, 1}, pads: []int{0, 0, 0, 0}},
		{name: "scaled", x: []int{2, 16, 4, 28}, m: 16, kh: 3, kw: 3, strides: []int{1, 1}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}, scale: true},
		{name: "scaled NCHW in", x: []int{2, 16, 4, 28}, m: 16, kh: 3, kw: 3, strides: []int{1, 1}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}, scale: true, nchwInput: true},
		{name: "NCHW in", x: []int{1, 6, 7, 31}, m: 32, kh: 3, kw: 3, strides: []int{2, 1}, dil: []int{1, 1}, pads: []int{1, 1, 1, 1}, res: true, nchwInput: true},
	} {
		xs, ws := c.x, []int{c.m, c.x[1], c.kh, c.kw}
		x := tensor.From(xs, randomFloats(r, xs))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		xin := x
		var scale *tensor.Tensor
		if c.scale {
			sv := randomFloats(r, []int{xs[0], xs[1], 1, 1})
			scale = tensor.From([]int{xs[0], xs[1], 1, 1}, sv)
			xv := slices.Clone(x.Data.([]float32))
			size := xs[2] * xs[3]
			for i := range xv {
				xv[i] *= sv[i/size]
			}
			xin = tensor.From(xs, xv)
		}
		ref := refConvolve(xin.Data.([]float32), xs, w.Data.([]float32), ws, b.Data.([]float32), 1, c.strides, c.dil, c.pads, false)
		ys := ref.shape
		var res *tensor.Tensor
		want := slices.Clone(ref.y)
		if c.res {
			res = tensor.From(ys, randomFloats(r, ys))
			for i, v := range res.Data.([]float32) {
				want[i] = math.Max(0, want[i]+float64(v))
			}
		}
		attrs := []*onnxpb.Attribute{
			opstest.AttrInts("pads", int64s(c.pads)...), opstest.AttrInts("strides", int64s(c.strides)...),
			opstest.AttrInts("dilations", int64s(c.dil)...), opstest.AttrInt("nhwc_out", 1),
		}
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedW], in[FusedB], in[FusedXScale] = x, w, b, scale
		if !c.nchwInput {
			attrs = append(attrs, opstest.AttrInt("nhwc_in", 1))
			in[FusedX] = toNHWC(x)
		}
		if c.res {
			attrs = append(attrs, opstest.AttrString("activation", "Relu"), opstest.AttrInt("nhwc_residual", 1))
			in[FusedResidual] = toNHWC(res)
		}
		absent := absentInputs(in)
		consts := make([]*tensor.Tensor, FusedInputs)
		consts[FusedW], consts[FusedB] = w, b
		for _, e := range engines() {
			name := fmt.Sprintf("%s %s", c.name, engineName(e))
			cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs, consts: consts, absent: absent, engine: e})
			f := cp.op.(*fusedConv)
			held := f.held
			if held == nil || held.w == nil || held.w.q != nil {
				t.Fatalf("%s: the weight is not held as float32 product weights", name)
			}
			g, err := f.geometry(xs)
			if err != nil {
				t.Fatal(err)
			}
			if !held.w.segmentsFit(g, &output{bias: f.bias, nhwcIn: f.layouts.nhwcIn, nhwcOut: true, biasRep: f.layouts.biasRep}) {
				t.Fatalf("%s: does not multiply its image in place", name)
			}
			y, err := cp.run1(in...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !slices.Equal(y.Shape, nhwcShape(ys)) {
				t.Fatalf("%s: shape %v, want %v", name, y.Shape, nhwcShape(ys))
			}
			for i, v := range toNCHW(y).Data.([]float32) {
				if tol := 1e-5 * (4*ref.mag[i] + 1); !(math.Abs(float64(v)-want[i]) <= tol) {
					t.Fatalf("%s: y[%d] = %v, want %v ± %v", name, i, v, want[i], tol)
				}
			}
		}
	}
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
