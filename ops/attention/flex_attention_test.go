package attention

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// mod is a graph attribute whose compiled form is a Go function, standing
// in for a graph the compiler would compile.
type mod struct {
	pb      *onnxpb.Graph
	in, out []string
	f       func(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error)
	calls   int
}

func newMod(name string, f func(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error)) *mod {
	return &mod{pb: &onnxpb.Graph{Name: name}, in: []string{"s"}, out: []string{"s2"}, f: f}
}

func (m *mod) Inputs() []string  { return m.in }
func (m *mod) Outputs() []string { return m.out }

func (m *mod) Run(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	m.calls++
	return m.f(c, in, inputs)
}

// flexNode is a FlexAttention node with the given score_mod and prob_mod
// (nil: absent).
func flexNode(scoreMod, probMod *mod) opstest.Node {
	mods := map[*onnxpb.Graph]*mod{}
	var attrs []*onnxpb.Attribute
	for name, m := range map[string]*mod{"score_mod": scoreMod, "prob_mod": probMod} {
		if m != nil {
			mods[m.pb] = m
			attrs = append(attrs, &onnxpb.Attribute{Name: name, Type: onnxpb.AttrGraph, G: m.pb})
		}
	}
	return opstest.Node{Domain: "ai.onnx.preview", Op: "FlexAttention", Opset: 1, Attrs: attrs,
		Subgraph: func(g *onnxpb.Graph) (ops.Graph, error) {
			m, ok := mods[g]
			if !ok {
				return nil, fmt.Errorf("graph %q is not compiled", g.Name)
			}
			return m, nil
		}}
}

// addCaptured is a score_mod adding the value the node captures (after
// its three inputs), broadcast over the scores' leading axes.
func addCaptured(_ *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, bias := inputs[0].Data.([]float32), in[3].Data.([]float32)
	out := make([]float32, len(s))
	for i := range s {
		out[i] = s[i] + bias[i%len(bias)]
	}
	return []*tensor.Tensor{tensor.From(slices.Clone(inputs[0].Shape), out)}, nil
}

// TestFlexAttentionScoreMod checks that a score_mod adding a bias gives
// what Attention gives with that bias as its float mask (with and without
// an identity prob_mod), that each subgraph runs once per call, and that
// a subgraph returning another shape or type is an input error.
func TestFlexAttentionScoreMod(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	q, k, v := randTensor(r, 2, 4, 3, 8), randTensor(r, 2, 2, 5, 8), randTensor(r, 2, 2, 5, 6)
	bias := randTensor(r, 3, 5)
	want, err := attentionRun(t, &AttentionAttrs{}, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v), to64(bias)})
	if err != nil {
		t.Fatal(err)
	}
	identity := func(_ *ops.Context, _, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) { return inputs, nil }
	for _, withProb := range []bool{false, true} {
		score := newMod("score", addCaptured)
		var prob *mod
		if withProb {
			prob = newMod("prob", identity)
		}
		out, err := compile(t, flexNode(score, prob), 3).Run(background(nil), []*tensor.Tensor{q, k, v, bias})
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, fmt.Sprintf("flex (prob_mod %v)", withProb), out, want[:1], 2e-5)
		if score.calls != 1 || prob != nil && prob.calls != 1 {
			t.Fatalf("score_mod ran %d times, prob_mod %v", score.calls, prob)
		}
	}
	for name, f := range map[string]func(c *ops.Context, in, inputs []*tensor.Tensor) ([]*tensor.Tensor, error){
		"another shape": func(_ *ops.Context, _, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := inputs[0]
			return []*tensor.Tensor{tensor.From([]int{x.Shape[0], x.Shape[1], x.Shape[2] * x.Shape[3]}, x.Data.([]float32))}, nil
		},
		"another type": func(_ *ops.Context, _, inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
			return []*tensor.Tensor{to64(inputs[0])}, nil
		},
	} {
		for _, asProb := range []bool{false, true} {
			n := flexNode(newMod("bad", f), nil)
			if asProb {
				n = flexNode(nil, newMod("bad", f))
			}
			if _, err := compile(t, n, 3).Run(background(nil), []*tensor.Tensor{q, k, v}); !errors.Is(err, ops.ErrInput) {
				t.Errorf("a subgraph returning %s (prob_mod %v): %v", name, asProb, err)
			}
		}
	}
}

// TestFlexAttentionFloat64 checks the float64 path and softmax_precision
// DOUBLE on float32 inputs against Attention without a mask.
func TestFlexAttentionFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	q, k, v := randTensor(r, 1, 2, 4, 8), randTensor(r, 1, 1, 6, 8), randTensor(r, 1, 1, 6, 3)
	want, err := attentionRun(t, &AttentionAttrs{}, gemm.Default())([]*tensor.Tensor{to64(q), to64(k), to64(v)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := compile(t, flexNode(nil, nil), 3).Run(background(nil), []*tensor.Tensor{to64(q), to64(k), to64(v)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].DType != tensor.Float64 {
		t.Fatalf("float64 inputs gave %v", got[0].DType)
	}
	compareOutputs(t, "float64", got, want[:1], 1e-12)
	n := flexNode(nil, nil)
	n.Attrs = append(n.Attrs, attrInt("softmax_precision", int64(onnxpb.Double)))
	got, err = compile(t, n, 3).Run(background(nil), []*tensor.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].DType != tensor.Float32 {
		t.Fatalf("float32 inputs in double precision gave %v", got[0].DType)
	}
	compareOutputs(t, "softmax_precision DOUBLE", got, want[:1], 1e-6)
}

// TestFlexAttentionRefused: subgraphs of the wrong arity, a subgraph the
// compiler cannot compile, no graph compiler at all, and an integer
// softmax_precision are refused at load.
func TestFlexAttentionRefused(t *testing.T) {
	two := newMod("two", nil)
	two.in = []string{"a", "b"}
	if _, _, err := opstest.Compile(flexNode(two, nil), 3); err == nil {
		t.Error("a score_mod of two inputs accepted")
	}
	n := flexNode(newMod("score", addCaptured), nil)
	n.Subgraph = func(g *onnxpb.Graph) (ops.Graph, error) { return nil, errors.New("no") }
	if _, _, err := opstest.Compile(n, 3); err == nil {
		t.Error("a score_mod that does not compile accepted")
	}
	n.Subgraph = nil
	if _, _, err := opstest.Compile(n, 3); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("no graph compiler: %v", err)
	}
	n = flexNode(nil, nil)
	n.Attrs = append(n.Attrs, attrInt("softmax_precision", int64(onnxpb.Int32)))
	if _, _, err := opstest.Compile(n, 3); !errors.Is(err, ops.ErrUnsupported) {
		t.Errorf("softmax_precision INT32: %v", err)
	}
	r := rand.New(rand.NewPCG(33, 34))
	op := compile(t, flexNode(nil, nil), 3)
	for name, in := range map[string][]*tensor.Tensor{
		"rank 3":        {randTensor(r, 1, 2, 4), randTensor(r, 1, 2, 4), randTensor(r, 1, 2, 4)},
		"heads":         {randTensor(r, 1, 3, 2, 4), randTensor(r, 1, 2, 2, 4), randTensor(r, 1, 2, 2, 4)},
		"mixed types":   {randTensor(r, 1, 2, 2, 4), to64(randTensor(r, 1, 2, 2, 4)), randTensor(r, 1, 2, 2, 4)},
		"key head size": {randTensor(r, 1, 2, 2, 4), randTensor(r, 1, 2, 2, 3), randTensor(r, 1, 2, 2, 4)},
	} {
		if _, err := op.Run(background(nil), in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}
