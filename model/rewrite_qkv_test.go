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
	"github.com/quantserve/quantserve/ops/attention"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestQKVRewrite: the three projections of a self-attention block run as
// one Linear whose output the attention reads packed, and every value is
// the one the three products gave, bit for bit, on float32 and int8
// weights (against the same graph with K's projection also an output,
// which keeps the three apart), and within rounding of the graph as
// written. Blocks the rule must leave alone stay three products: V
// projected from another input, an activation on K's projection, a bias
// on two of the three, K's projection named by quantize_exclude.
func TestQKVRewrite(t *testing.T) {
	const batch, seq, heads, size, k = 2, 9, 3, 4, 10
	hidden := heads * size
	r := rand.New(rand.NewPCG(17, 18))
	perm := func(p ...int64) *onnxpb.Attribute {
		return &onnxpb.Attribute{Name: "perm", Type: onnxpb.AttrInts, Ints: p}
	}
	type variant struct {
		name    string
		vFrom   string // the input V is projected from
		kAct    string // an activation after K's projection
		kOut    bool   // K's projection is also a graph output
		noVBias bool
		exclude bool // quantize_exclude names K's projection
		packed  bool
	}
	inits := map[string]*tensor.Tensor{
		"heads": tensor.From([]int{4}, []int64{0, 0, heads, size}),
		"merge": tensor.From([]int{3}, []int64{0, 0, int64(hidden)}),
		"c":     tensor.From([]int{}, []float32{0.5}),
	}
	for _, p := range []string{"q", "k", "v"} {
		inits["w"+p] = randFloats(r, 0.3, k, hidden)
		inits["b"+p] = randFloats(r, 0.1, hidden)
	}
	in := map[string]*tensor.Tensor{"x": randFloats(r, 1, batch, seq, k), "x2": randFloats(r, 1, batch, seq, k)}
	build := func(c variant) onnxbuild.Graph {
		g := onnxbuild.Graph{
			Opset:   20,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, seq, k), onnxbuild.V("x2", tensor.Float32, -1, seq, k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, seq, hidden)},
			Inits:   inits,
		}
		node := func(op string, in []string, out string, attrs ...*onnxpb.Attribute) string {
			g.Nodes = append(g.Nodes, onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
			return out
		}
		project := func(p, x string) string {
			y := node("MatMul", []string{x, "w" + p}, p+".mm")
			if p == "v" && c.noVBias {
				return y
			}
			return node("Add", []string{y, "b" + p}, p)
		}
		x := func(p string) string {
			if p == "v" && c.vFrom != "" {
				return c.vFrom
			}
			return "x"
		}
		heads := func(p, v string) string {
			return node("Transpose", []string{node("Reshape", []string{v, "heads"}, p+".r")}, p+".h", perm(0, 2, 1, 3))
		}
		q := heads("q", project("q", x("q")))
		kv := project("k", x("k"))
		if c.kAct != "" {
			kv = node(c.kAct, []string{kv}, "k.act")
		}
		if c.kOut {
			g.Outputs = append(g.Outputs, onnxbuild.V(kv, tensor.Float32, -1, seq, hidden))
		}
		kt := node("Transpose", []string{heads("k", kv)}, "kt", perm(0, 1, 3, 2))
		v := heads("v", project("v", x("v")))
		s := node("Mul", []string{node("MatMul", []string{q, kt}, "s"), "c"}, "scaled")
		p := node("Softmax", []string{s}, "p", onnxbuild.IntAttr("axis", -1))
		o := node("Transpose", []string{node("MatMul", []string{p, v}, "o")}, "ot", perm(0, 2, 1, 3))
		node("Reshape", []string{o, "merge"}, "y")
		return g
	}
	run := func(c variant, opts model.Options) (y []float32, packed bool) {
		t.Helper()
		file := build(c).Bytes()
		if c.exclude { // the node computing K's product, by its name in the file
			pb, err := onnxpb.UnmarshalModel(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range pb.Graph.Nodes {
				if n.Outputs[0] == "k.mm" {
					opts.QuantizeExclude = []string{n.Name}
				}
			}
		}
		m, err := model.LoadWith(file, opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		linears := 0
		for _, st := range m.Steps() {
			switch st.Op {
			case "Linear":
				linears++
			case "Attention":
				packed = st.Params.(*attention.FusedAttentionAttrs).Packed
			}
		}
		if !opts.Unrewritten && (packed && linears != 1 || !packed && linears < 2) { // two when V is a bare MatMul
			t.Errorf("%s: %d Linear steps, packed %v", c.name, linears, packed)
		}
		out, err := m.Run(context.Background(), in, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return out["y"].Data.([]float32), packed
	}
	apart := variant{name: "K an output", kOut: true}
	for _, c := range []variant{
		{name: "self-attention", packed: true},
		apart,
		{name: "V from another input", vFrom: "x2"},
		{name: "K through Relu", kAct: "Relu"},
		{name: "V without bias", noVBias: true},
		{name: "K excluded from int8", exclude: true},
	} {
		for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}} {
			got, packed := run(c, opts)
			if packed != c.packed {
				t.Errorf("%s (int8 %v): packed %v, want %v", c.name, opts.Quantize, packed, c.packed)
			}
			if !c.packed {
				continue
			}
			if three, _ := run(apart, opts); !slices.Equal(got, three) {
				t.Errorf("%s (int8 %v): packed values differ from three products'", c.name, opts.Quantize)
			}
			if opts.Quantize {
				continue
			}
			opts.Unrewritten = true
			want, _ := run(c, opts)
			for j := range want {
				if d := math.Abs(float64(got[j] - want[j])); d > 1e-5*(1+math.Abs(float64(want[j]))) {
					t.Errorf("%s: y[%d] = %v, as written %v", c.name, j, got[j], want[j])
					break
				}
			}
		}
	}
}
