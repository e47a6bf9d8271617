package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/ops/pool"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestStemLayout: in a ResNet's stem (7×7 conv -> Relu -> MaxPool ->
// two convolutions (one with its Relu), their sum -> Relu), the layout rule passes the
// channels-last image through the max pool: the stem writes it NHWC, the
// pool runs as quantserve's channels-last MaxPool, and both readers take
// its output NHWC, at opset 9 too (ResNet-50 of the ONNX zoo). A pool
// whose output the caller reads still reads the stem channels-last, and
// writes its output NCHW (nchw_out) for the caller and both readers; one
// whose Indices are read stays ONNX's, between NCHW images; one with an
// attribute its opset does not know (ceil_mode before 10) is refused as
// ONNX's MaxPool refuses it.
// Every graph, on float32 and int8 weights, gives the values of the graph
// as written (float32 within rounding, int8 within its quantization
// error), run after run.
func TestStemLayout(t *testing.T) {
	const n, c, m, h, w = 2, 3, 16, 30, 26
	r := rand.New(rand.NewPCG(81, 82))
	for _, tc := range []struct {
		name    string
		opset   int64
		output  bool // the pool's output is a graph output too
		indices bool // the pool's Indices are a graph output
		layout  stemLayout
		ceil    bool // the pool has ceil_mode
	}{
		{"stem", 17, false, false, stemLayout{true, true, false, true}, false},
		{"pool an output", 17, true, false, stemLayout{true, true, true, false}, false},
		{"indices read", 17, false, true, stemLayout{}, false},
		{"opset 9", 9, false, false, stemLayout{true, true, false, true}, false},
		{"ceil_mode at opset 9", 9, false, false, stemLayout{}, true},
		{"ceil_mode", 17, false, false, stemLayout{true, true, false, true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := onnxbuild.Node{Op: "MaxPool", Inputs: []string{"s"}, Outputs: []string{"p"}, Attrs: []*onnxpb.Attribute{
				onnxbuild.IntsAttr("kernel_shape", 3, 3), onnxbuild.IntsAttr("pads", 1, 1, 1, 1), onnxbuild.IntsAttr("strides", 2, 2)}}
			if tc.indices {
				pool.Outputs = append(pool.Outputs, "pi")
			}
			if tc.ceil {
				pool.Attrs = append(pool.Attrs, onnxbuild.IntAttr("ceil_mode", 1))
			}
			g := onnxbuild.Graph{
				Opset:   tc.opset,
				Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n, c, h, w)},
				Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, n, m, 8, 7)},
				Nodes: []onnxbuild.Node{
					{Op: "Conv", Inputs: []string{"x", "w0", "b0"}, Outputs: []string{"c0"}, Attrs: []*onnxpb.Attribute{
						onnxbuild.IntsAttr("pads", 3, 3, 3, 3), onnxbuild.IntsAttr("strides", 2, 2)}},
					{Op: "Relu", Inputs: []string{"c0"}, Outputs: []string{"s"}},
					pool,
					{Op: "Conv", Inputs: []string{"p", "w1", "b1"}, Outputs: []string{"c1"}, Attrs: []*onnxpb.Attribute{
						onnxbuild.IntsAttr("pads", 1, 1, 1, 1)}},
					{Op: "Conv", Inputs: []string{"p", "w2", "b2"}, Outputs: []string{"d2"}},
					{Op: "Relu", Inputs: []string{"d2"}, Outputs: []string{"c2"}},
					{Op: "Add", Inputs: []string{"c1", "c2"}, Outputs: []string{"a"}},
					{Op: "Relu", Inputs: []string{"a"}, Outputs: []string{"y"}},
				},
				Inits: map[string]*tensor.Tensor{
					"w0": randFloats(r, 0.3, m, c, 7, 7), "b0": randFloats(r, 0.1, m),
					"w1": randFloats(r, 0.3, m, m, 3, 3), "b1": randFloats(r, 0.1, m),
					"w2": randFloats(r, 0.3, m, m, 1, 1), "b2": randFloats(r, 0.1, m),
				},
			}
			if tc.output {
				g.Outputs = append(g.Outputs, onnxbuild.V("p", tensor.Float32, n, m, 8, 7))
			}
			if tc.indices {
				g.Outputs = append(g.Outputs, onnxbuild.V("pi", tensor.Int64, n, m, 8, 7))
			}
			in := map[string]*tensor.Tensor{"x": randFloats(r, 1, n, c, h, w)}
			plain, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: true})
			if tc.ceil && tc.opset < 10 {
				if err == nil {
					t.Fatal("ceil_mode at opset 9 loaded as written")
				}
				if _, err := model.LoadWith(g.Bytes(), model.Options{}); err == nil {
					t.Fatal("ceil_mode at opset 9 loaded rewritten")
				}
				return
			}
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
				checkStemLayout(t, mod, tc.layout)
				tol := 1e-5 * float64(hi-lo)
				if q {
					tol = 0.03 * float64(hi-lo)
				}
				for round := 0; round < 3; round++ {
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
					for _, name := range []string{"p", "pi"} {
						if want[name] == nil || q && name == "p" {
							continue
						}
						if !slices.Equal(out[name].Shape, want[name].Shape) || !equalData(out[name].Data, want[name].Data) {
							t.Fatalf("int8=%v round %d: %s the caller reads differs from the graph as written", q, round, name)
						}
					}
				}
			}
		})
	}
}

// equalData reports whether a and b hold the same values (float32 bits
// within 1e-5 relative; int64 exactly).
func equalData(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		b := b.([]float32)
		return slices.EqualFunc(a, b, func(x, y float32) bool {
			return math.Abs(float64(x-y)) <= 1e-5*(1+math.Abs(float64(y)))
		})
	case []int64:
		return slices.Equal(a, b.([]int64))
	}
	return false
}

// stemLayout is where a stem's image is channels-last: written so by the
// stem, read so by the pool (quantserve's form), the pool's output
// written NCHW (nchw_out), and read channels-last by the convolutions
// after the pool.
type stemLayout struct {
	stem, pool, poolNCHW, readers bool
}

// checkStemLayout checks the rewritten stem's steps against want.
func checkStemLayout(t *testing.T, mod *model.Model, want stemLayout) {
	t.Helper()
	var convs []*conv.FusedConvAttrs
	var got stemLayout
	pools := 0
	for _, s := range mod.Steps() {
		switch s.Op {
		case conv.FusedConvType:
			convs = append(convs, s.Params.(*conv.FusedConvAttrs))
		case "MaxPool":
			pools++
			got.pool = s.Desc.Domain == ops.RewriteDomain
			if a, ok := s.Params.(*pool.MaxPoolNHWCAttrs); ok {
				got.poolNCHW = a.NCHWOut
			}
		}
	}
	if pools != 1 || len(convs) != 3 {
		t.Fatalf("%d pools and %d fused convolutions, want 1 and 3", pools, len(convs))
	}
	got.stem = convs[0].NHWCOut
	if got.readers = convs[1].NHWCIn; convs[2].NHWCIn != got.readers {
		t.Errorf("the pool's readers read it channels-last %v and %v", convs[1].NHWCIn, convs[2].NHWCIn)
	}
	if got != want {
		t.Errorf("layout %+v, want %+v", got, want)
	}
}

// TestLastPoolLayout: a network's last max pool reads the convolution's
// image channels-last. When a flatten reads its output too (a VGG), it
// writes its output NCHW (nchw_out), where the convolution wrote NCHW for
// it before, and the global pool stays ONNX's; when only the global pool
// reads it (PaddleOCR's classifier), its output stays channels-last and
// the global pool runs as quantserve's, with no transpose between them.
// Both outputs are the graph's as written, bit for bit.
func TestLastPoolLayout(t *testing.T) {
	for _, flatten := range []bool{true, false} {
		t.Run(fmt.Sprintf("flatten=%v", flatten), func(t *testing.T) { testLastPoolLayout(t, flatten) })
	}
}

func testLastPoolLayout(t *testing.T, flatten bool) {
	const n, c, m, h, w = 2, 8, 24, 10, 26
	r := rand.New(rand.NewPCG(83, 84))
	g := onnxbuild.Graph{
		Opset:   17,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n, c, h, w)},
		Outputs: []onnxbuild.IO{onnxbuild.V("g", tensor.Float32, n, m, 1, 1)},
		Nodes: []onnxbuild.Node{
			{Op: "Conv", Inputs: []string{"x", "w0", "b0"}, Outputs: []string{"c0"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("pads", 1, 1, 1, 1)}},
			{Op: "Relu", Inputs: []string{"c0"}, Outputs: []string{"s"}},
			{Op: "MaxPool", Inputs: []string{"s"}, Outputs: []string{"p"}, Attrs: []*onnxpb.Attribute{
				onnxbuild.IntsAttr("kernel_shape", 2, 2), onnxbuild.IntsAttr("strides", 2, 2)}},
			{Op: "GlobalAveragePool", Inputs: []string{"p"}, Outputs: []string{"g"}},
		},
		Inits: map[string]*tensor.Tensor{"w0": randFloats(r, 0.3, m, c, 3, 3), "b0": randFloats(r, 0.1, m)},
	}
	if flatten {
		g.Outputs = append(g.Outputs, onnxbuild.V("f", tensor.Float32, n, m*5*13))
		g.Nodes = append(g.Nodes, onnxbuild.Node{Op: "Flatten", Inputs: []string{"p"}, Outputs: []string{"f"}})
	}
	in := map[string]*tensor.Tensor{"x": randFloats(r, 1, n, c, h, w)}
	plain, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := model.LoadWith(g.Bytes(), model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stemNHWC, poolNHWC, poolNCHW, gapNCHW bool
	for _, s := range mod.Steps() {
		switch s.Op {
		case conv.FusedConvType:
			stemNHWC = s.Params.(*conv.FusedConvAttrs).NHWCOut
		case "MaxPool":
			poolNHWC = s.Desc.Domain == ops.RewriteDomain
			if a, ok := s.Params.(*pool.MaxPoolNHWCAttrs); ok {
				poolNCHW = a.NCHWOut
			}
		case "GlobalAveragePool":
			gapNCHW = s.Desc.Domain != ops.RewriteDomain
		}
	}
	if !stemNHWC || !poolNHWC || poolNCHW != flatten || gapNCHW != flatten {
		t.Errorf("convolution writes channels-last %v, pool reads so %v and writes NCHW %v, global pool reads NCHW %v; want true, true, %v, %v",
			stemNHWC, poolNHWC, poolNCHW, gapNCHW, flatten, flatten)
	}
	for round := 0; round < 2; round++ {
		got, err := mod.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name := range want {
			if !slices.Equal(got[name].Shape, want[name].Shape) || !equalData(got[name].Data, want[name].Data) {
				t.Fatalf("round %d: %s (shape %v) differs from the graph as written (shape %v)", round, name, got[name].Shape, want[name].Shape)
			}
		}
	}
}
