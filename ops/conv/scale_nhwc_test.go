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
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvScaledNHWC: a fused convolution with a channel scale
// reading its image channels-last (a squeeze-and-excitation block's
// scaled convolution after the layout rule) gives what it gives reading
// the same image in NCHW: the same bits on the product's paths (a
// pointwise or 3×3 convolution of one group, float32 and int8, where
// both lay out the same scaled rows), the depthwise kernels' values
// within rounding; a scale of any shape Mul broadcasts (per image and
// channel, per channel for every image, rank 3, or a whole image, which
// is no channel scale) likewise. A pointwise product scales each tile's
// rows as it reads them; the others scale the image in place when they
// recycle it (recycle_inputs), or into a buffer of their own. An image
// not recycled is left as it was. On every kernel table, one thread and
// two.
func TestFusedConvScaledNHWC(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 19))
	const n, c, m, h, w = 2, 24, 16, 7, 9
	for _, tc := range []struct {
		name    string
		k       int   // kernel size
		group   int   // group (c: depthwise)
		scale   []int // the scale's shape
		product bool  // both layouts run the product on the same rows
	}{
		{"pointwise", 1, 1, []int{n, c, 1, 1}, true},
		{"3x3", 3, 1, []int{n, c, 1, 1}, true},
		{"per channel", 1, 1, []int{1, c, 1, 1}, true},
		{"rank 3", 1, 1, []int{c, 1, 1}, true},
		{"whole image", 1, 1, []int{n, c, h, w}, true},
		{"depthwise", 3, c, []int{n, c, 1, 1}, false},
	} {
		mo := m
		if tc.group == c {
			mo = c
		}
		ws := []int{mo, c / tc.group, tc.k, tc.k}
		wt := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{mo}, randomFloats(r, []int{mo}))
		x := tensor.From([]int{n, c, h, w}, randomFloats(r, []int{n, c, h, w}))
		xs := tensor.From(tc.scale, randomFloats(r, tc.scale))
		pad := int64(tc.k / 2)
		base := []*onnxpb.Attribute{opstest.AttrInts("pads", pad, pad, pad, pad), opstest.AttrInt("group", int64(tc.group)),
			opstest.AttrString("activation", "Relu")}
		consts := make([]*tensor.Tensor, FusedInputs)
		consts[FusedW], consts[FusedB] = wt, b
		var absent []int
		for i := FusedBNScale; i <= FusedResidual; i++ {
			absent = append(absent, i)
		}
		for _, e := range engines() {
			for _, q := range []bool{false, true} {
				name := fmt.Sprintf("%s %s int8=%v", tc.name, engineName(e), q)
				build := func(attrs ...*onnxpb.Attribute) *compiled {
					return mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: append(slices.Clone(base), attrs...),
						inputs: FusedInputs, consts: consts, absent: absent, engine: e, quantize: q, scheme: quant.PerChannel})
				}
				in := make([]*tensor.Tensor, FusedInputs)
				in[FusedX], in[FusedW], in[FusedB], in[FusedXScale] = x, wt, b, xs
				want, err := build().run1(in...)
				if err != nil {
					t.Fatalf("%s NCHW: %v", name, err)
				}
				for _, recycle := range []bool{false, true} {
					attrs := []*onnxpb.Attribute{opstest.AttrInt("nhwc_in", 1)}
					xl := toNHWC(x)
					orig := slices.Clone(xl.Data.([]float32))
					if recycle {
						attrs = append(attrs, opstest.AttrInts("recycle_inputs", FusedX))
					}
					in[FusedX] = xl
					got, err := build(attrs...).run1(in...)
					if err != nil {
						t.Fatalf("%s channels-last: %v", name, err)
					}
					if !slices.Equal(got.Shape, want.Shape) {
						t.Fatalf("%s: shape %v, NCHW %v", name, got.Shape, want.Shape)
					}
					gv, wv := got.Data.([]float32), want.Data.([]float32)
					for i := range wv {
						same := math.Float32bits(gv[i]) == math.Float32bits(wv[i])
						if tc.product && !same || !same && !(math.Abs(float64(gv[i]-wv[i])) <= 1e-5*(1+math.Abs(float64(wv[i])))) {
							t.Fatalf("%s recycle=%v: y[%d] = %v, reading NCHW %v", name, recycle, i, gv[i], wv[i])
						}
					}
					if !recycle && !slices.Equal(xl.Data.([]float32), orig) {
						t.Fatalf("%s: the image it does not recycle was modified", name)
					}
				}
			}
		}
	}
}

// TestFusedConvScaleEitherOperand: the channel scale of a fused
// convolution may come at either of the Mul's positions (the rewrite
// keeps the graph's order): with the scale at FusedX and the image at
// FusedXScale the node gives the bits of the other order, its output of
// the image's shape, on the image read NCHW.
func TestFusedConvScaleEitherOperand(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 29))
	xs, ws := []int{2, 8, 5, 6}, []int{4, 8, 3, 3}
	x := tensor.From(xs, randomFloats(r, xs))
	s := tensor.From([]int{2, 8, 1, 1}, randomFloats(r, []int{2, 8, 1, 1}))
	w := tensor.From(ws, randomFloats(r, ws))
	b := tensor.From([]int{4}, randomFloats(r, []int{4}))
	consts := make([]*tensor.Tensor, FusedInputs)
	consts[FusedW], consts[FusedB] = w, b
	cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: FusedInputs, consts: consts,
		absent: []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual}, attrs: []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1)}})
	in := make([]*tensor.Tensor, FusedInputs)
	in[FusedW], in[FusedB] = w, b
	in[FusedX], in[FusedXScale] = x, s
	want, err := cp.run1(in...)
	if err != nil {
		t.Fatal(err)
	}
	in[FusedX], in[FusedXScale] = s, x
	got, err := cp.run1(in...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape, []int{2, 4, 5, 6}) || !slices.Equal(got.Shape, want.Shape) {
		t.Fatalf("shape %v with the scale first, %v with the image first; want [2 4 5 6]", got.Shape, want.Shape)
	}
	if !slices.Equal(got.Data.([]float32), want.Data.([]float32)) {
		t.Fatal("the two orders give different values")
	}
}
