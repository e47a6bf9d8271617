package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/tensor"
)

// TestDepthwiseLayout: in a MobileNet block, 1×1 -> depthwise -> 1×1
// (each with its activation), the layout rule hands the values between
// the three fused convolutions channels-last, the depthwise one reading
// and writing NHWC, while the graph's input and output stay NCHW; a
// depthwise weight of two output channels per input channel, and any
// other grouped convolution, keeps NCHW on both sides. The weight may be
// an initializer or, as exporters write it, a Constant node's. Every graph gives
// the values of the graph as written, within float32 rounding.
func TestDepthwiseLayout(t *testing.T) {
	const n, c, m, h, w = 2, 8, 24, 10, 14
	r := rand.New(rand.NewPCG(41, 42))
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	type layout struct{ in, out bool }
	for _, tc := range []struct {
		name   string
		mult   int   // output channels per input channel of the depthwise conv
		group  int   // its group (m: depthwise)
		stride int64 // its strides
		node   bool  // its weight a Constant node's, as exporters write it
		want   []layout
	}{
		{"depthwise", 1, m, 1, false, []layout{{false, true}, {true, true}, {true, false}}},
		{"depthwise stride 2", 1, m, 2, false, []layout{{false, true}, {true, true}, {true, false}}},
		{"constant node", 1, m, 2, true, []layout{{false, true}, {true, true}, {true, false}}},
		{"multiplier 2", 2, m, 1, false, []layout{{false, false}, {false, false}, {false, false}}},
		{"grouped", 1, m / 4, 1, false, []layout{{false, false}, {false, false}, {false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := m * tc.mult
			inits := map[string]*tensor.Tensor{
				"w1": randFloats(r, 0.3, m, c, 1, 1), "b1": randFloats(r, 0.1, m),
				"wd": randFloats(r, 0.3, md, m/tc.group, 3, 3), "bd": randFloats(r, 0.1, md),
				"w2": randFloats(r, 0.3, c, md, 1, 1), "b2": randFloats(r, 0.1, c),
			}
			oh, ow := (h-1)/int(tc.stride)+1, (w-1)/int(tc.stride)+1
			g := onnxbuild.Graph{
				Opset:   17,
				Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, n, c, h, w)},
				Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, n, c, oh, ow)},
				Nodes: []onnxbuild.Node{
					{Op: "Conv", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"c1"}},
					{Op: "Relu", Inputs: []string{"c1"}, Outputs: []string{"a1"}},
					{Op: "Conv", Inputs: []string{"a1", "wd", "bd"}, Outputs: []string{"cd"}, Attrs: []*onnxpb.Attribute{pads,
						onnxbuild.IntAttr("group", int64(tc.group)), onnxbuild.IntsAttr("strides", tc.stride, tc.stride)}},
					{Op: "HardSwish", Inputs: []string{"cd"}, Outputs: []string{"ad"}},
					{Op: "Conv", Inputs: []string{"ad", "w2", "b2"}, Outputs: []string{"c2"}},
					{Op: "Relu", Inputs: []string{"c2"}, Outputs: []string{"y"}},
				},
				Inits: inits,
			}
			if tc.node {
				value := &onnxpb.Attribute{Name: "value", Type: onnxpb.AttrTensor, T: model.TensorToONNX("wd", inits["wd"])}
				g.Nodes = append([]onnxbuild.Node{{Op: "Constant", Outputs: []string{"wd"}, Attrs: []*onnxpb.Attribute{value}}}, g.Nodes...)
				delete(inits, "wd")
			}
			x := randFloats(r, 1, n, c, h, w)
			var got [2]*tensor.Tensor
			for i, unrewritten := range []bool{false, true} {
				mod, err := model.LoadWith(g.Bytes(), model.Options{Unrewritten: unrewritten})
				if err != nil {
					t.Fatal(err)
				}
				if !unrewritten {
					var lays []layout
					for _, s := range mod.Steps() {
						if s.Op == "Constant" {
							continue
						}
						a, ok := s.Params.(*conv.FusedConvAttrs)
						if !ok || s.Op != conv.FusedConvType {
							t.Fatalf("step %s is not a fused convolution", s.Op)
						}
						lays = append(lays, layout{a.NHWCIn, a.NHWCOut})
					}
					if fmt.Sprint(lays) != fmt.Sprint(tc.want) {
						t.Errorf("layouts (nhwc_in, nhwc_out) %v, want %v", lays, tc.want)
					}
				}
				for run := 0; run < 2; run++ { // the second on pooled buffers and kept plans
					out, err := mod.Run(context.Background(), map[string]*tensor.Tensor{"x": x}, nil)
					if err != nil {
						t.Fatal(err)
					}
					got[i] = out["y"]
				}
			}
			gv, wv := got[0].Data.([]float32), got[1].Data.([]float32)
			if fmt.Sprint(got[0].Shape) != fmt.Sprint(got[1].Shape) {
				t.Fatalf("shape %v, as written %v", got[0].Shape, got[1].Shape)
			}
			for j := range wv {
				if d := math.Abs(float64(gv[j] - wv[j])); !(d <= 1e-5*(1+math.Abs(float64(wv[j])))) {
					t.Fatalf("y[%d] = %v, as written %v", j, gv[j], wv[j])
				}
			}
		})
	}
}
