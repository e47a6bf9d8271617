package rnn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func randFloats(r *rand.Rand, scale float64, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return tensor.From(shape, v)
}

// cellWeights holds W, R, B (and LSTM's P) for two directions.
type cellWeights struct {
	op                   string
	gates, hidden, input int
	w, r, b, p           *tensor.Tensor
	extra                []*onnxpb.Attribute
}

func newCellWeights(r *rand.Rand, op string, gates, hidden, input int, extra ...*onnxpb.Attribute) cellWeights {
	return cellWeights{op: op, gates: gates, hidden: hidden, input: input, extra: extra,
		w: randFloats(r, 0.5, 2, gates*hidden, input), r: randFloats(r, 0.5, 2, gates*hidden, hidden),
		b: randFloats(r, 0.5, 2, 2*gates*hidden), p: randFloats(r, 0.5, 2, 3*hidden)}
}

// pick returns the weights of directions [from, to).
func pick(t *tensor.Tensor, from, to int) *tensor.Tensor {
	row := t.Len() / t.Shape[0]
	shape := append([]int{to - from}, t.Shape[1:]...)
	return tensor.From(shape, slices.Clone(t.Data.([]float32)[from*row:to*row]))
}

// layer is one node over directions [from, to) of the weights: W, R, B
// (and P) known at load, X and sequence_lens at run time.
type layer struct {
	node   opstest.Node
	consts []*tensor.Tensor
}

func (c cellWeights) layer(direction string, from, to int, layout int64) layer {
	consts := []*tensor.Tensor{nil, pick(c.w, from, to), pick(c.r, from, to), pick(c.b, from, to), nil}
	if c.op == "LSTM" {
		consts = append(consts, nil, nil, pick(c.p, from, to))
	}
	attrs := append([]*onnxpb.Attribute{opstest.AttrInt("hidden_size", int64(c.hidden)), opstest.AttrString("direction", direction), opstest.AttrInt("layout", layout)}, c.extra...)
	return layer{node: opstest.Node{Op: c.op, Opset: 22, Attrs: attrs, Outputs: 2, Consts: consts}, consts: consts}
}

// inputs returns the node's inputs for X and sequence_lens.
func (l layer) inputs(x *tensor.Tensor, lens []int32) []*tensor.Tensor {
	in := slices.Clone(l.consts)
	in[0], in[4] = x, tensor.From([]int{len(lens)}, lens)
	return in
}

func runRecurrent(t *testing.T, l layer, x *tensor.Tensor, lens []int32) (y, yh []float32) {
	t.Helper()
	out, err := opstest.Run(t, l.node, l.inputs(x, lens)...)
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Data.([]float32), out[1].Data.([]float32)
}

// reverseTime reverses rows [seq][row] along seq.
func reverseTime(v []float32, seq int) []float32 {
	row := len(v) / seq
	out := make([]float32, len(v))
	for s := 0; s < seq; s++ {
		copy(out[(seq-1-s)*row:], v[s*row:(s+1)*row])
	}
	return out
}

// direction extracts direction d of Y [seq, dirs, rest].
func direction(y []float32, seq, dirs, d int) []float32 {
	row := len(y) / seq / dirs
	var out []float32
	for s := 0; s < seq; s++ {
		out = append(out, y[(s*dirs+d)*row:(s*dirs+d+1)*row]...)
	}
	return out
}

var cells = []struct {
	op    string
	gates int
	extra []*onnxpb.Attribute
}{
	{"RNN", 1, nil},
	{"GRU", 3, nil},
	{"GRU", 3, []*onnxpb.Attribute{opstest.AttrInt("linear_before_reset", 1)}},
	{"LSTM", 4, nil},
	{"LSTM", 4, []*onnxpb.Attribute{opstest.AttrInt("input_forget", 1), {Name: "clip", Type: onnxpb.AttrFloat, F: 0.7}}},
}

// TestRecurrentDirections: a bidirectional layer is its forward and
// reverse layers side by side; a reverse layer equals the forward one on
// the time-reversed sequence; layout 1 is layout 0 transposed; and a
// batch entry with a shorter sequence_lens computes as if alone on its
// prefix, with zeros after it.
func TestRecurrentDirections(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const seq, batch, input, hidden = 5, 3, 4, 6
	for _, c := range cells {
		cw := newCellWeights(r, c.op, c.gates, hidden, input, c.extra...)
		x := randFloats(r, 1, seq, batch, input)
		full := []int32{seq, seq, seq}
		yb, hb := runRecurrent(t, cw.layer("bidirectional", 0, 2, 0), x, full)
		yf, hf := runRecurrent(t, cw.layer("forward", 0, 1, 0), x, full)
		yr, hr := runRecurrent(t, cw.layer("reverse", 1, 2, 0), x, full)
		opstest.Close(t, c.op+" Y forward half", direction(yb, seq, 2, 0), yf, 1e-6)
		opstest.Close(t, c.op+" Y reverse half", direction(yb, seq, 2, 1), yr, 1e-6)
		opstest.Close(t, c.op+" Y_h", hb, append(slices.Clone(hf), hr...), 1e-6)
		// reverse(x) == forward(reverse-time x), mirrored
		xr := tensor.From(x.Shape, reverseTime(x.Data.([]float32), seq))
		yf1, hf1 := runRecurrent(t, cw.layer("forward", 1, 2, 0), xr, full)
		opstest.Close(t, c.op+" reverse vs forward on reversed input", reverseTime(yf1, seq), yr, 1e-5)
		opstest.Close(t, c.op+" reverse vs forward Y_h", hf1, hr, 1e-5)
		// layout 1: X [batch, seq, k], Y [batch, seq, dirs, h]
		xb := make([]float32, x.Len())
		for s := 0; s < seq; s++ {
			for b := 0; b < batch; b++ {
				copy(xb[(b*seq+s)*input:], x.Data.([]float32)[(s*batch+b)*input:(s*batch+b+1)*input])
			}
		}
		yl, _ := runRecurrent(t, cw.layer("bidirectional", 0, 2, 1), tensor.From([]int{batch, seq, input}, xb), full)
		for s := 0; s < seq; s++ {
			for d := 0; d < 2; d++ {
				for b := 0; b < batch; b++ {
					got := yl[((b*seq+s)*2+d)*hidden : ((b*seq+s)*2+d+1)*hidden]
					want := yb[((s*2+d)*batch+b)*hidden : ((s*2+d)*batch+b+1)*hidden]
					opstest.Close(t, c.op+" layout 1", got, want, 1e-6)
				}
			}
		}
		// sequence_lens: entry 1 runs 2 steps; outputs after it are zero
		ys, hs := runRecurrent(t, cw.layer("bidirectional", 0, 2, 0), x, []int32{seq, 2, seq})
		xs := make([]float32, 2*input)
		for s := 0; s < 2; s++ {
			copy(xs[s*input:], x.Data.([]float32)[(s*batch+1)*input:(s*batch+2)*input])
		}
		ya, ha := runRecurrent(t, cw.layer("bidirectional", 0, 2, 0), tensor.From([]int{2, 1, input}, xs), []int32{2})
		for s := 0; s < seq; s++ {
			for d := 0; d < 2; d++ {
				got := ys[((s*2+d)*batch+1)*hidden : ((s*2+d)*batch+2)*hidden]
				if s >= 2 {
					opstest.Close(t, c.op+" Y past sequence_lens", got, make([]float32, hidden), 0)
					continue
				}
				opstest.Close(t, c.op+" Y within sequence_lens", got, ya[(s*2+d)*hidden:(s*2+d+1)*hidden], 1e-6)
			}
		}
		for d := 0; d < 2; d++ {
			opstest.Close(t, c.op+" Y_h with sequence_lens", hs[(d*batch+1)*hidden:(d*batch+2)*hidden], ha[d*hidden:(d+1)*hidden], 1e-6)
		}
	}
}

// TestRecurrentWeightsAtRunTime: W and R given at run time (packed per
// request) compute what the same weights known at load do.
func TestRecurrentWeightsAtRunTime(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const seq, batch, input, hidden = 4, 2, 3, 5
	for _, c := range cells {
		cw := newCellWeights(r, c.op, c.gates, hidden, input, c.extra...)
		x := randFloats(r, 1, seq, batch, input)
		lens := []int32{seq, seq - 1}
		l := cw.layer("bidirectional", 0, 2, 0)
		y, yh := runRecurrent(t, l, x, lens)
		late := l
		late.node.Consts = nil
		y2, yh2 := runRecurrent(t, late, x, lens)
		opstest.Close(t, c.op+" Y", y2, y, 0)
		opstest.Close(t, c.op+" Y_h", yh2, yh, 0)
	}
}

// compilerNode stands in for the graph compiler's record of a node
// (ops.Node.Host): it keeps the layers reported and the inputs held.
type compilerNode struct {
	layers []string // "K×N kernels"
	held   []int
}

func (h *compilerNode) AddLayer(k, cols int, kernels string) {
	h.layers = append(h.layers, fmt.Sprintf("%d×%d %s", k, cols, kernels))
}

func (h *compilerNode) HoldInputs(i ...int) { h.held = append(h.held, i...) }

// quantizedLayer compiles l as the graph compiler does for a model
// loaded with Quantize and scheme: the operator, and what the builder
// told the compiler.
func quantizedLayer(t *testing.T, l layer, scheme quant.Scheme) (ops.Operator, *compilerNode) {
	t.Helper()
	d, err := ops.Lookup("", l.node.Op, l.node.Opset)
	if err != nil {
		t.Fatal(err)
	}
	host := &compilerNode{}
	n := &ops.Node{Name: "rnn", Type: l.node.Op, Opset: l.node.Opset, Attrs: map[string]*onnxpb.Attribute{},
		Outputs: []string{"Y", "Y_h"}, Consts: l.consts, Engine: gemm.Default(), Quantize: true, Scheme: scheme, Host: host}
	for range l.consts {
		n.Inputs = append(n.Inputs, "in")
	}
	for _, a := range l.node.Attrs {
		n.Attrs[a.Name] = a
	}
	params, err := d.Parse(n)
	if err != nil {
		t.Fatal(err)
	}
	op, err := d.Build(n, params)
	if err != nil {
		t.Fatal(err)
	}
	return op, host
}

// TestRecurrentInt8 runs the input projections on the int8 kernels
// (weights large enough to quantize) and compares with float32. On
// unit-variance random inputs, per-row activation quantization leaves
// pre-activations within about 0.015 (one sigma); over 1,536 outputs the
// largest difference stays under 6% of the output range.
func TestRecurrentInt8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const seq, batch, input, hidden = 6, 2, 64, 64
	for _, c := range cells {
		cw := newCellWeights(r, c.op, c.gates, hidden, input, c.extra...)
		// smaller weights keep the recurrence stable
		for _, w := range []*tensor.Tensor{cw.w, cw.r} {
			for i, v := range w.Data.([]float32) {
				w.Data.([]float32)[i] = v * 0.25
			}
		}
		x := randFloats(r, 1, seq, batch, input)
		l := cw.layer("bidirectional", 0, 2, 0)
		q, host := quantizedLayer(t, l, quant.PerChannel)
		if want := fmt.Sprintf("%d×%d int8 per_channel (input projections; recurrent products float32)", input, c.gates*hidden); len(host.layers) != 1 || host.layers[0] != want {
			t.Fatalf("%s layers: %q", c.op, host.layers)
		}
		if !slices.Equal(host.held, []int{1, 2}) {
			t.Errorf("%s holds inputs %v, want W and R (1, 2)", c.op, host.held)
		}
		in := l.inputs(x, []int32{seq, seq})
		in[1], in[2] = nil, nil // held: the graph passes nil
		outs, err := q.Run(ops.NewContext(context.Background(), gemm.Default(), false), in)
		if err != nil {
			t.Fatal(err)
		}
		yq := outs[0].Data.([]float32)
		yf, _ := runRecurrent(t, l, x, []int32{seq, seq})
		var maxDiff, span float64
		for i := range yf {
			maxDiff = max(maxDiff, math.Abs(float64(yq[i]-yf[i])))
			span = max(span, math.Abs(float64(yf[i])))
		}
		if maxDiff > 0.06*span {
			t.Errorf("%s: int8 differs from float32 by %v (output range %v)", c.op, maxDiff, span)
		}
	}
}

// TestRecurrentBadInputs: wrong shapes and lengths are input errors.
func TestRecurrentBadInputs(t *testing.T) {
	cw := newCellWeights(rand.New(rand.NewPCG(1, 1)), "LSTM", 4, 3, 2)
	l := cw.layer("forward", 0, 1, 0)
	for name, c := range map[string]struct {
		x    *tensor.Tensor
		lens []int32
	}{
		"input size": {tensor.From([]int{2, 1, 3}, make([]float32, 6)), []int32{2}},
		"rank":       {tensor.From([]int{2, 2}, make([]float32, 4)), []int32{2}},
		"long lens":  {tensor.From([]int{2, 1, 2}, make([]float32, 4)), []int32{3}},
		"lens count": {tensor.From([]int{2, 1, 2}, make([]float32, 4)), []int32{2, 2}},
	} {
		if _, err := opstest.Run(t, l.node, l.inputs(c.x, c.lens)...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

// TestRecurrentStopsWhenCancelled: a run whose request has ended stops
// with the request's error.
func TestRecurrentStopsWhenCancelled(t *testing.T) {
	cw := newCellWeights(rand.New(rand.NewPCG(2, 2)), "GRU", 3, 4, 3)
	l := cw.layer("forward", 0, 1, 0)
	op, _, err := opstest.Compile(l.node, len(l.consts))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := randFloats(rand.New(rand.NewPCG(3, 3)), 1, 3, 1, 3)
	if _, err := op.Run(ops.NewContext(ctx, gemm.Default(), false), l.inputs(x, []int32{3})); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

// BenchmarkRecurrent runs each cell over 32 steps of one sequence
// (batch 1, as a streaming speech or text model does) and of 8, with
// weights known at load: the recurrent products are one row each, the
// gates' activations a large share of a step.
func BenchmarkRecurrent(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	const seq, input, hidden = 32, 128, 256
	for _, c := range cells[:4] {
		cw := newCellWeights(r, c.op, c.gates, hidden, input, c.extra...)
		for _, w := range []*tensor.Tensor{cw.w, cw.r} {
			for i, v := range w.Data.([]float32) {
				w.Data.([]float32)[i] = v * 0.1
			}
		}
		l := cw.layer("forward", 0, 1, 0)
		op, _, err := opstest.Compile(l.node, len(l.consts))
		if err != nil {
			b.Fatal(err)
		}
		name := c.op
		if len(c.extra) > 0 {
			name += "/linear_before_reset"
		}
		for _, batch := range []int{1, 8} {
			x := randFloats(r, 1, seq, batch, input)
			lens := make([]int32, batch)
			for i := range lens {
				lens[i] = seq
			}
			in := l.inputs(x, lens)
			in[1], in[2] = nil, nil // held at load
			b.Run(fmt.Sprintf("%s/batch%d", name, batch), func(b *testing.B) {
				for b.Loop() {
					if _, err := op.Run(opstest.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
