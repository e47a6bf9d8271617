package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestSELayout: in a squeeze-and-excitation block (depthwise conv ->
// global pool -> 1×1 conv -> Relu -> 1×1 conv -> HardSigmoid -> Mul with
// the depthwise output -> 1×1 conv), the layout rule keeps the depthwise
// output channels-last for both its readers: the global pool runs as
// its channels-last form (quantserve's GlobalAveragePool or
// GlobalMaxPool), the scaled convolution reads its image NHWC, last, and
// recycles it. The Mul's operands may come either way round. An image
// the caller also reads stays NCHW, and its pool ONNX's. Every graph, on
// float32 and int8 weights, gives the values of the graph as written
// (float32 within rounding, int8 within its quantization error), run
// after run on recycled buffers, and a trace of it keeps every value
// intact.
func TestSELayout(t *testing.T) {
	const n, c, hid, m, h, w = 2, 24, 6, 16, 10, 14
	r := rand.New(rand.NewPCG(71, 72))
	for _, tc := range []struct {
		name      string
		pool      string
		scaleLast bool // Mul(image, scale) as PaddleOCR writes it; else Mul(scale, image)
		output    bool // the depthwise output is a graph output too
		nhwc      bool // the layout the image should get
	}{
		{"average", "GlobalAveragePool", true, false, true},
		{"scale first", "GlobalAveragePool", false, false, true},
		{"max", "GlobalMaxPool", true, false, true},
		{"image an output", "GlobalAveragePool", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inits := map[string]*tensor.Tensor{
				"wd": randFloats(r, 0.3, c, 1, 3, 3), "bd": randFloats(r, 0.1, c),
				"w1": randFloats(r, 0.3, hid, c, 1, 1), "b1": randFloats(r, 0.1, hid),
				"w2": randFloats(r, 0.3, c, hid, 1, 1), "b2": randFloats(r, 0.1, c),
				"w3": randFloats(r, 0.3, m, c, 1, 1), "b3": randFloats(r, 0.1, m),
			}
			mul := []string{"v", "se"}
			if !tc.scaleLast {
				mul = []string{"se", "v"}
			}
			g := onnxbuild.Graph{
				Opset:   17,
				Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n, c, h, w)},
				Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, n, m, h, w)},
				Nodes: []onnxbuild.Node{
					{Op: "Conv", Inputs: []string{"x", "wd", "bd"}, Outputs: []string{"cd"}, Attrs: []*onnxpb.Attribute{
						onnxbuild.IntsAttr("pads", 1, 1, 1, 1), onnxbuild.IntAttr("group", c)}},
					{Op: "Relu", Inputs: []string{"cd"}, Outputs: []string{"v"}},
					{Op: tc.pool, Inputs: []string{"v"}, Outputs: []string{"p"}},
					{Op: "Conv", Inputs: []string{"p", "w1", "b1"}, Outputs: []string{"c1"}},
					{Op: "Relu", Inputs: []string{"c1"}, Outputs: []string{"a1"}},
					{Op: "Conv", Inputs: []string{"a1", "w2", "b2"}, Outputs: []string{"c2"}},
					{Op: "HardSigmoid", Inputs: []string{"c2"}, Outputs: []string{"se"}, Attrs: []*onnxpb.Attribute{
						onnxbuild.FloatAttr("alpha", 0.2), onnxbuild.FloatAttr("beta", 0.5)}},
					{Op: "Mul", Inputs: mul, Outputs: []string{"sx"}},
					{Op: "Conv", Inputs: []string{"sx", "w3", "b3"}, Outputs: []string{"y"}},
				},
				Inits: inits,
			}
			if tc.output {
				g.Outputs = append(g.Outputs, onnxbuild.V("v", tensor.Float32, n, c, h, w))
			}
			x := randFloats(r, 1, n, c, h, w)
			in := map[string]*tensor.Tensor{"x": x}
			plain, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: true})
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.Run(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			wv := want["y"].Data.([]float32)
			lo, hi := slices.Min(wv), slices.Max(wv)
			for _, q := range []bool{false, true} {
				mod, err := model.LoadWith(g.Bytes(), model.Options{Quantize: q, Scheme: quant.PerChannel})
				if err != nil {
					t.Fatal(err)
				}
				checkSELayout(t, mod, tc.pool, tc.nhwc)
				tol := 1e-5 * float64(hi-lo)
				if q {
					tol = 0.02 * float64(hi-lo)
				}
				for round := 0; round < 3; round++ { // recycled buffers on the later rounds
					out, err := mod.Run(context.Background(), in, nil)
					if err != nil {
						t.Fatal(err)
					}
					got := out["y"]
					if !slices.Equal(got.Shape, want["y"].Shape) {
						t.Fatalf("shape %v, as written %v", got.Shape, want["y"].Shape)
					}
					for i, v := range got.Data.([]float32) {
						if d := math.Abs(float64(v - wv[i])); !(d <= tol) {
							t.Fatalf("int8=%v round %d: y[%d] = %v, as written %v", q, round, i, v, wv[i])
						}
					}
					if tc.output && !slices.Equal(out["v"].Data.([]float32), want["v"].Data.([]float32)) {
						t.Fatalf("int8=%v round %d: the image the caller reads differs from the graph as written", q, round)
					}
				}
				vals, err := mod.Trace(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[*float32]int{}
				for s, v := range vals {
					if v == nil {
						continue
					}
					if d, ok := v.Data.([]float32); ok && len(d) > 0 {
						if o, dup := seen[&d[0]]; dup && v != vals[o] {
							t.Fatalf("int8=%v: trace slots %d and %d share memory", q, o, s)
						}
						seen[&d[0]] = s
					}
				}
				// The trace keeps the image as the block read it: unscaled.
				if s, ok := mod.Slot("v"); ok && !q {
					tv := vals[s]
					ref := want["v"]
					if !tc.output {
						ref = plainValue(t, plain, in, "v")
					}
					if tc.nhwc {
						tv = nchw(tv)
					}
					if !slices.Equal(tv.Shape, ref.Shape) {
						t.Fatalf("traced image shape %v, as written %v", tv.Shape, ref.Shape)
					}
					rv := ref.Data.([]float32)
					for i, v := range tv.Data.([]float32) {
						if d := math.Abs(float64(v - rv[i])); !(d <= 1e-5*(1+math.Abs(float64(rv[i])))) {
							t.Fatalf("traced image [%d] = %v, as written %v", i, v, rv[i])
						}
					}
				}
				ty := vals[mod.OutputSlot(0)].Data.([]float32)
				out, err := mod.Run(context.Background(), in, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ty, out["y"].Data.([]float32)) {
					t.Errorf("int8=%v: the trace's output differs from Run's", q)
				}
			}
		})
	}
}

// checkSELayout checks the rewritten SE block's steps: the depthwise
// convolution writes the image channels-last when nhwc says so, the pool
// is quantserve's channels-last form exactly then, and the scaled
// convolution reads the image in that layout and, being its last reader,
// recycles it.
func checkSELayout(t *testing.T, mod *model.Model, pool string, nhwc bool) {
	t.Helper()
	var convs []*conv.FusedConvAttrs
	pools := 0
	for _, s := range mod.Steps() {
		switch {
		case s.Op == conv.FusedConvType:
			convs = append(convs, s.Params.(*conv.FusedConvAttrs))
		case s.Op == pool:
			pools++
			if got := s.Desc.Domain == ops.RewriteDomain; got != nhwc {
				t.Errorf("%s runs in domain %q, want channels-last %v", pool, s.Desc.Domain, nhwc)
			}
		default:
			t.Errorf("step %s (%s) left unfused", s.Name, s.Op)
		}
	}
	if pools != 1 || len(convs) != 4 {
		t.Fatalf("%d pools and %d fused convolutions, want 1 and 4", pools, len(convs))
	}
	dw, scaled := convs[0], convs[3]
	if dw.NHWCOut != nhwc || scaled.NHWCIn != nhwc {
		t.Errorf("image written channels-last %v, read so %v; want %v", dw.NHWCOut, scaled.NHWCIn, nhwc)
	}
	if !slices.Equal(scaled.Fused, []string{"Mul"}) {
		t.Errorf("scaled convolution fused %q, want [Mul]", scaled.Fused)
	}
	if nhwc && (!dw.PooledOut || !slices.Contains(scaled.RecycleInputs, int64(conv.FusedX))) {
		t.Errorf("image pooled %v, recycled by the scaled convolution at %v; want pooled and recycled at X", dw.PooledOut, scaled.RecycleInputs)
	}
}

// plainValue returns value name of the graph as written, run on in.
func plainValue(t *testing.T, plain *model.Model, in map[string]*tensor.Tensor, name string) *tensor.Tensor {
	t.Helper()
	vals, err := plain.Trace(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := plain.Slot(name)
	if !ok {
		t.Fatalf("no value %s", name)
	}
	return vals[s]
}

// nchw returns a channels-last image [N, H, W, C] as [N, C, H, W].
func nchw(x *tensor.Tensor) *tensor.Tensor {
	n, hh, ww, c := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	src := x.Data.([]float32)
	dst := make([]float32, len(src))
	for b := 0; b < n; b++ {
		for i := 0; i < hh*ww; i++ {
			for j := 0; j < c; j++ {
				dst[(b*c+j)*hh*ww+i] = src[(b*hh*ww+i)*c+j]
			}
		}
	}
	return tensor.From([]int{n, c, hh, ww}, dst)
}
