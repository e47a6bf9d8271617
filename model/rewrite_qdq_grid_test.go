package model_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/conv"
	"github.com/quantserve/quantserve/quant"
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

// gridOfStep returns the grid a fused convolution step was told its
// input lies on (grid_*): scale, zero point, type; ok false for none.
func gridOfStep(s model.Step) (scale float32, zp int64, typ string, ok bool) {
	a := s.Params.(*conv.FusedConvAttrs)
	if len(a.GridScale) != 1 || len(a.GridZeroPoint) != 1 {
		return 0, 0, "", false
	}
	return a.GridScale[0], a.GridZeroPoint[0], a.GridType, true
}

// TestQDQInputGrid: each fused convolution of a static QDQ file is told
// the grid of the pair its input comes from: the input's pair, a
// convolution's own pair (through a max pool, whose pair went), a pair
// that stays, and a convolution's input pair behind its channel scale; a
// convolution reading a scaled image without a pair after the Mul is
// told none.
func TestQDQInputGrid(t *testing.T) {
	type grid struct {
		scale float32
		zp    int64
	}
	// steps returns the grid of each fused convolution, by the Conv it
	// fused (c1, c2, ...: its output is the pair's, c1_dq, ...; or y, for
	// the convolution named last, which took in the final Add).
	steps := func(t *testing.T, data []byte, last string) map[string]*grid {
		m, err := model.LoadWith(data, model.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*grid{}
		for _, s := range m.Steps() {
			if s.Op != conv.FusedConvType {
				continue
			}
			name := last
			for i := 1; i <= 4; i++ {
				if slot, ok := m.Slot(fmt.Sprintf("c%d_dq", i)); ok && slot == s.Out[0] {
					name = fmt.Sprintf("c%d", i)
				}
			}
			out[name] = nil
			if sc, zp, typ, ok := gridOfStep(s); ok {
				if typ != "uint8" {
					t.Errorf("%s: grid type %q", s.Name, typ)
				}
				out[name] = &grid{sc, zp}
			}
		}
		return out
	}
	check := func(t *testing.T, got map[string]*grid, want map[string]*grid) {
		t.Helper()
		for name, w := range want {
			g, ok := got[name]
			switch {
			case !ok:
				t.Errorf("no fused convolution %s (have %v)", name, got)
			case w == nil && g != nil:
				t.Errorf("%s: grid %v, want none", name, *g)
			case w != nil && (g == nil || *g != *w):
				t.Errorf("%s: grid %v, want %v", name, g, *w)
			}
		}
	}
	pads := onnxbuild.IntsAttr("pads", 1, 1, 1, 1)
	check(t, steps(t, stemNet(0.02, 0.02, pads), "c2"), map[string]*grid{"c1": {0.008, 128}, "c2": {0.02, 0}, "c3": {0.02, 0}})
	check(t, steps(t, stemNet(0.02, 0.025, pads), "c2"), map[string]*grid{"c1": {0.008, 128}, "c2": {0.025, 0}, "c3": {0.025, 0}})

	// A squeeze-and-excitation block: the scaled convolution's own input
	// pair; and one without a pair after its Mul.
	q := newQDQNet(13)
	x := q.qdq("x", 0.01, 128)
	c1 := q.qdq(q.conv(x, "w1", "c1", 8, 3, 1, false), 0.03, 128)
	p := q.qdq(q.node("GlobalAveragePool", "p", c1), 0.02, 120)
	hs := q.qdq(q.node("HardSigmoid", "hs", q.qdq(q.conv(p, "w2", "c2", 8, 8, 1, false), 0.03, 128)), 1.0/255, 0)
	y1 := q.qdq(q.conv(q.qdq(q.node("Mul", "sx", c1, hs), 0.02, 100), "w3", "c3", 8, 8, 1, false), 0.05, 128)
	y2 := q.qdq(q.conv(q.node("Mul", "sy", c1, hs), "w4", "c4", 8, 8, 1, false), 0.05, 128)
	q.node("Add", "y", y1, y2)
	check(t, steps(t, q.graph(8, 10, 12), "c3"), map[string]*grid{"c1": {0.01, 128}, "c2": {0.02, 120}, "c3": {0.02, 100}, "c4": nil})
}

// TestQDQGridAnswers: a static QDQ network whose int8 layers take their
// inputs' grids multiplies exactly the integers the file holds (weights
// whose per-channel int8 form is exact), so its int8 answers are its
// float32 answers but where float32 rounding puts a value on the other
// side of a pair's rounding boundary: at most one step of the output's
// pair apart, and all but a few equal. Quantizing the layers' inputs
// again per row would move many of them.
func TestQDQGridAnswers(t *testing.T) {
	q := newQDQNet(17)
	x := q.qdq("x", 0.01, 128)
	a1 := q.qdq(q.node("Relu", "a1", q.conv(x, "w1", "c1", 64, 3, 1, true)), 0.02, 0)
	a2 := q.qdq(q.node("Relu", "a2", q.conv(a1, "w2", "c2", 64, 64, 1, true)), 0.03, 0)
	q.qdq(q.conv(a2, "w3", "c3", 64, 64, 1, true), 0.05, 128)
	q.node("Identity", "y", "c3_dq")
	q.exact("w1", "w2", "w3")
	f32, i8 := loadFloatAndInt8(t, q.graph(64, 10, 12))
	var grids int
	for _, l := range i8.Layers {
		if strings.HasSuffix(l.Kernels, "(QDQ activations)") {
			grids++
		}
	}
	if grids != 2 {
		t.Fatalf("layers %v: want the two 64-channel convolutions on their inputs' grids", i8.Layers)
	}
	withinAStep(t, f32, i8, qdqInput(19), 0.05)
}

// exact sets a 127 in every output channel of the named weights, so
// that their int8 per-channel forms are the file's bytes exactly.
func (q *qdqNet) exact(weights ...string) {
	for _, w := range weights {
		v := q.inits[w+"_q"]
		per := v.Len() / v.Shape[0]
		for co := 0; co < v.Shape[0]; co++ {
			v.Data.([]int8)[co*per+co%per] = 127
		}
	}
}

// loadFloatAndInt8 loads data in float32 and with per-channel int8.
func loadFloatAndInt8(t *testing.T, data []byte) (f32, i8 *model.Model) {
	t.Helper()
	f32, err := model.LoadWith(data, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i8, err = model.LoadWith(data, model.Options{Quantize: true, Scheme: quant.PerChannel})
	if err != nil {
		t.Fatal(err)
	}
	return f32, i8
}

// withinAStep runs f32 and i8 on in and checks their outputs y lie
// within a step of the output pair of each other, at most 1% of them
// apart, and a quarter or more not zero.
func withinAStep(t *testing.T, f32, i8 *model.Model, in map[string]*tensor.Tensor, step float64) {
	t.Helper()
	a, err := f32.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := i8.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, got := a["y"].Data.([]float32), b["y"].Data.([]float32)
	differ, nonzero := 0, 0
	for i := range want {
		if got[i] != want[i] {
			differ++
		}
		if want[i] != 0 {
			nonzero++
		}
		if d := math.Abs(float64(got[i] - want[i])); d > step*1.001 {
			t.Fatalf("y[%d] = %v in int8, %v in float32: more than a step apart", i, got[i], want[i])
		}
	}
	if differ*100 > len(want) || nonzero*4 < len(want) {
		t.Fatalf("%d of %d values differ from float32's (more than 1%%), %d not zero", differ, len(want), nonzero)
	}
	t.Logf("%d of %d values differ by a step", differ, len(want))
}

// TestQDQInputLayerOnGrid runs a static QDQ file's first layer (three
// input channels, a weight large enough to pay) on the int8 kernels with
// its input pair's bytes, where the policy keeps our own int8's first
// layer float32: its answers are the file's float32 ones within a step of
// the output pair.
func TestQDQInputLayerOnGrid(t *testing.T) {
	q := newQDQNet(23)
	x := q.qdq("x", 0.01, 128)
	q.qdq(q.node("Relu", "a1", q.conv(x, "w1", "c1", 320, 3, 1, true)), 0.05, 0)
	q.node("Identity", "y", "a1_dq")
	q.exact("w1")
	f32, i8 := loadFloatAndInt8(t, q.graph(320, 10, 12))
	if len(i8.Layers) != 1 || i8.Layers[0].Kernels != "int8 per_channel (QDQ activations)" {
		t.Fatalf("layers %v: want the first layer on its input pair's grid", i8.Layers)
	}
	withinAStep(t, f32, i8, qdqInput(29), 0.05)
}
