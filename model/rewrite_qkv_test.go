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
	"github.com/quantserve/quantserve/ops/attention"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestQKVRewrite: the three projections of a self-attention block run as
// one Linear whose output the attention reads packed, and every value is
// the one the three products gave, bit for bit, on float32 weights and
// on int8 ones scaled per channel or per block (against the same graph
// with K's projection also an output, which keeps the three apart), and
// within rounding of the graph as written; a batch of none runs. Blocks
// the rule must leave alone stay three products: V projected from
// another input, an activation on K's projection, V a bare MatMul (no
// bias: not a Linear), K's projection named by quantize_exclude; with
// int8 weights, a per-tensor scheme (one scale for the three weights
// together) and weights each too small to quantize that together are not
// (int8 where the three ran float32).
func TestQKVRewrite(t *testing.T) {
	const batch, seq, heads, size = 2, 9, 4, 16
	hidden := heads * size
	r := rand.New(rand.NewPCG(17, 18))
	type variant struct {
		name    string
		k       int    // X's width: 64, each weight 4096 values (int8), or 32 (float32 alone, int8 packed)
		vFrom   string // the input V is projected from
		kAct    string // an activation after K's projection
		kOut    bool   // K's projection is also a graph output
		noVBias bool
		exclude bool // quantize_exclude names K's projection
		packed  bool // with float32 weights
	}
	inits := map[string]*tensor.Tensor{
		"heads": tensor.From([]int{4}, []int64{0, 0, heads, size}),
		"merge": tensor.From([]int{3}, []int64{0, 0, int64(hidden)}),
		"c":     tensor.From([]int{}, []float32{0.25}),
	}
	for _, k := range []int{32, 64} {
		for _, p := range []string{"q", "k", "v"} {
			inits[fmt.Sprintf("w%s%d", p, k)] = randFloats(r, 0.3, k, hidden)
		}
	}
	for _, p := range []string{"q", "k", "v"} {
		inits["b"+p] = randFloats(r, 0.1, hidden)
	}
	inputs := func(c variant, n int) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"x": randFloats(rand.New(rand.NewPCG(5, 6)), 1, n, seq, c.k), "x2": randFloats(rand.New(rand.NewPCG(7, 8)), 1, n, seq, c.k)}
	}
	build := func(c variant) onnxbuild.Graph {
		g := onnxbuild.Graph{
			Opset:   20,
			Inputs:  []onnxbuild.IO{onnxbuild.V("x", tensor.Float32, -1, seq, c.k), onnxbuild.V("x2", tensor.Float32, -1, seq, c.k)},
			Outputs: []onnxbuild.IO{onnxbuild.V("y", tensor.Float32, -1, seq, hidden)},
			Inits:   inits,
		}
		node := func(op string, in []string, out string, attrs ...*onnxpb.Attribute) string {
			g.Nodes = append(g.Nodes, onnxbuild.Node{Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
			return out
		}
		project := func(p, x string) string {
			y := node("MatMul", []string{x, fmt.Sprintf("w%s%d", p, c.k)}, p+".mm")
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
			return node("Transpose", []string{node("Reshape", []string{v, "heads"}, p+".r")}, p+".h", onnxbuild.IntsAttr("perm", 0, 2, 1, 3))
		}
		q := heads("q", project("q", x("q")))
		kv := project("k", x("k"))
		if c.kAct != "" {
			kv = node(c.kAct, []string{kv}, "k.act")
		}
		if c.kOut {
			g.Outputs = append(g.Outputs, onnxbuild.V(kv, tensor.Float32, -1, seq, hidden))
		}
		kt := node("Transpose", []string{heads("k", kv)}, "kt", onnxbuild.IntsAttr("perm", 0, 1, 3, 2))
		v := heads("v", project("v", x("v")))
		s := node("Mul", []string{node("MatMul", []string{q, kt}, "s"), "c"}, "scaled")
		p := node("Softmax", []string{s}, "p", onnxbuild.IntAttr("axis", -1))
		o := node("Transpose", []string{node("MatMul", []string{p, v}, "o")}, "ot", onnxbuild.IntsAttr("perm", 0, 2, 1, 3))
		node("Reshape", []string{o, "merge"}, "y")
		return g
	}
	load := func(c variant, opts model.Options) *model.Model {
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
		return m
	}
	run := func(c variant, m *model.Model, n int) []float32 {
		t.Helper()
		out, err := m.Run(context.Background(), inputs(c, n), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return out["y"].Data.([]float32)
	}
	packedIn := func(m *model.Model) (packed bool, linears int) {
		for _, st := range m.Steps() {
			switch st.Op {
			case "Linear":
				linears++
			case "Attention":
				packed = st.Params.(*attention.FusedAttentionAttrs).Packed
			}
		}
		return packed, linears
	}
	for _, c := range []variant{
		{name: "self-attention", k: 64, packed: true},
		{name: "weights too small alone", k: 32, packed: true},
		{name: "V from another input", k: 64, vFrom: "x2"},
		{name: "K through Relu", k: 64, kAct: "Relu"},
		{name: "V a bare MatMul", k: 64, noVBias: true},
		{name: "K excluded from int8", k: 64, exclude: true},
	} {
		for _, opts := range []model.Options{{}, {Quantize: true, Scheme: quant.PerChannel}, {Quantize: true, Scheme: quant.PerBlock}, {Quantize: true, Scheme: quant.PerTensor}} {
			name := fmt.Sprintf("%s (int8 %v %v)", c.name, opts.Quantize, opts.Scheme)
			m := load(c, opts)
			want := c.packed && (!opts.Quantize || opts.Scheme != quant.PerTensor && c.k == 64)
			packed, linears := packedIn(m)
			if packed != want || packed && linears != 1 || !packed && linears < 2 { // two when V is a bare MatMul
				t.Errorf("%s: packed %v in %d Linear steps, want packed %v", name, packed, linears, want)
			}
			if !packed {
				continue
			}
			if got := model.Int8Layers(m.Layers); opts.Quantize != (got == len(m.Layers)) || !opts.Quantize && got != 0 {
				t.Errorf("%s: %d of %d layers int8: %+v", name, got, len(m.Layers), m.Layers)
			}
			apart := c
			apart.kOut = true
			if got, three := run(c, m, batch), run(apart, load(apart, opts), batch); !slices.Equal(got, three) {
				t.Errorf("%s: packed values differ from three products'", name)
			}
			if y := run(c, m, 0); len(y) != 0 {
				t.Errorf("%s: a batch of none gave %d values", name, len(y))
			}
			if opts.Quantize {
				continue
			}
			opts.Unrewritten = true
			got, written := run(c, m, batch), run(c, load(c, opts), batch)
			for j := range written {
				if d := math.Abs(float64(got[j] - written[j])); d > 1e-5*(1+math.Abs(float64(written[j]))) {
					t.Errorf("%s: y[%d] = %v, as written %v", name, j, got[j], written[j])
					break
				}
			}
		}
	}
}
