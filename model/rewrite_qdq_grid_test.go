package model_test

import (
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/tensor"
)

// stemNet is a ResNet's stem as quantize_static writes it: a convolution
// and its pair (scale s1, zero point 0), a 3×3 max pool of stride 2 with
// attributes pool, the pool's pair (scale s2), and two convolutions
// reading the pooled value, as a bottleneck and its projection do, each
// with its pair, added into y.
func stemNet(s1, s2 float32, pool ...*onnxpb.Attribute) []byte {
	q := newQDQNet(11)
	x := q.qdq("x", 0.008, 128)
	a := q.qdq(q.conv(x, "w1", "c1", 8, 3, 1, true), s1, 0)
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "MaxPool", Inputs: []string{a}, Outputs: []string{"p"},
		Attrs: append([]*onnxpb.Attribute{onnxbuild.IntsAttr("kernel_shape", 3, 3), onnxbuild.IntsAttr("strides", 2, 2)}, pool...)})
	p := q.qdq("p", s2, 0)
	b := q.qdq(q.conv(p, "w2", "c2", 8, 8, 1, true), 0.03, 0)
	c := q.qdq(q.conv(p, "w3", "c3", 8, 8, 1, true), 0.03, 0)
	q.node("Add", "y", b, c)
	return q.graph(8, -1, -1) // the pool's size varies with its attributes
}

// TestQDQGridAfterMaxPool: the pair quantize_static writes after a max
// pool, with the scale of the pair before it, is an identity on the
// pool's values and goes, so that the stem's convolution writes
// channels-last and the pool runs so; the answers are the graph's as
// written bit for bit. A pair of another scale, or a pool whose windows
// may hold padding alone or that rounds its size up, keeps it.
func TestQDQGridAfterMaxPool(t *testing.T) {
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	for _, tc := range []struct {
		name  string
		data  []byte
		pairs int // QuantizeDequantize steps: the input's, and the pool's when it stays
	}{
		{"same scale", stemNet(0.02, 0.02, pads), 1},
		{"no pads", stemNet(0.02, 0.02), 1},
		{"other scale", stemNet(0.02, 0.025, pads), 2},
		{"pads as wide as the window", stemNet(0.02, 0.02, onnxbuild.IntsAttr("pads", 3, 3, 0, 0)), 2},
		{"ceil mode", stemNet(0.02, 0.02, pads, onnxbuild.IntAttr("ceil_mode", 1)), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkQDQBits(t, tc.data, qdqInput(12), map[string]int{"QuantizeDequantize": tc.pairs, "MaxPool": 1, "FusedConv": 3}, 8)
			if tc.pairs != 1 {
				return
			}
			m, err := model.LoadWith(tc.data, model.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Steps() {
				if a, ok := s.Params.(*conv.FusedConvAttrs); ok && s.Op == conv.FusedConvType {
					if !a.NHWCOut {
						t.Fatalf("%s writes NCHW: the pool between the convolutions should pass channels-last on", s.Name)
					}
					break
				}
			}
		})
	}
}

// TestQDQGridAfterReshape: a pair after operators that only move values
// (Transpose, Reshape), with the scale of the pair before them, goes too,
// as quantize_static writes them around an attention's reshapes; one
// after an operator that computes new values (an average pool) stays.
func TestQDQGridAfterReshape(t *testing.T) {
	q := newQDQNet(13)
	x := q.qdq("x", 0.008, 128)
	a := q.qdq(q.conv(x, "w1", "c1", 8, 3, 1, true), 0.02, 3)
	q.inits["shape"] = tensor.From([]int{3}, []int64{0, 8, -1})
	q.nodes = append(q.nodes, onnxbuild.Node{Op: "Transpose", Inputs: []string{a}, Outputs: []string{"t"}, Attrs: []*onnxpb.Attribute{onnxbuild.IntsAttr("perm", 0, 1, 3, 2)}})
	r := q.qdq(q.node("Reshape", "r", "t", "shape"), 0.02, 3)
	p := q.qdq(q.node("GlobalAveragePool", "p", a), 0.02, 3)
	q.node("Add", "y", q.node("ReduceMax", "m", r), q.node("Flatten", "f", p))
	data := onnxbuild.Graph{
		Opset:   13,
		Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, 3, 10, 12)},
		Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, -1, -1)},
		Nodes:   q.nodes,
		Inits:   q.inits,
	}.Bytes()
	checkQDQBits(t, data, qdqInput(14), map[string]int{"QuantizeDequantize": 2, "Transpose": 1, "Reshape": 1, "FusedConv": 1}, 8)
}
