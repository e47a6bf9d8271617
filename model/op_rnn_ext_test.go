package model_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/model"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

func strAttr(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

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

// dirs returns the weights of directions [from, to).
func pick(t *tensor.Tensor, from, to int) *tensor.Tensor {
	row := t.Len() / t.Shape[0]
	shape := append([]int{to - from}, t.Shape[1:]...)
	return tensor.From(shape, slices.Clone(t.Data.([]float32)[from*row:to*row]))
}

// model builds one node over directions [from, to) of the weights.
func (c cellWeights) model(t *testing.T, direction string, from, to int, layout int64, opts model.Options) *model.Model {
	t.Helper()
	inits := map[string]*tensor.Tensor{"W": pick(c.w, from, to), "R": pick(c.r, from, to), "B": pick(c.b, from, to)}
	in := []string{"X", "W", "R", "B", "lens"}
	outs := []string{"Y", "Y_h"}
	if c.op == "LSTM" {
		inits["P"] = pick(c.p, from, to)
		in = append(in, "", "", "P")
	}
	attrs := append([]*onnxpb.Attribute{onnxbuild.IntAttr("hidden_size", int64(c.hidden)), strAttr("direction", direction), onnxbuild.IntAttr("layout", layout)}, c.extra...)
	g := onnxbuild.Graph{
		Opset:   22,
		Inputs:  []onnxbuild.IO{onnxbuild.V("X", tensor.Float32, -1, -1, c.input), onnxbuild.V("lens", tensor.Int32, -1)},
		Outputs: []onnxbuild.IO{onnxbuild.V("Y", tensor.Float32), onnxbuild.V("Y_h", tensor.Float32)},
		Nodes:   []onnxbuild.Node{{Op: c.op, Inputs: in, Outputs: outs, Attrs: attrs}},
		Inits:   inits,
	}
	m, err := model.LoadWith(g.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runRecurrent(t *testing.T, m *model.Model, x *tensor.Tensor, lens []int32) (y, yh []float32) {
	t.Helper()
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"X": x, "lens": tensor.From([]int{len(lens)}, lens)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out["Y"].Data.([]float32), out["Y_h"].Data.([]float32)
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

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

var cells = []struct {
	op    string
	gates int
	extra []*onnxpb.Attribute
}{
	{"RNN", 1, nil},
	{"GRU", 3, nil},
	{"GRU", 3, []*onnxpb.Attribute{onnxbuild.IntAttr("linear_before_reset", 1)}},
	{"LSTM", 4, nil},
	{"LSTM", 4, []*onnxpb.Attribute{onnxbuild.IntAttr("input_forget", 1), {Name: "clip", Type: onnxpb.AttrFloat, F: 0.7}}},
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
		yb, hb := runRecurrent(t, cw.model(t, "bidirectional", 0, 2, 0, model.Options{}), x, full)
		yf, hf := runRecurrent(t, cw.model(t, "forward", 0, 1, 0, model.Options{}), x, full)
		yr, hr := runRecurrent(t, cw.model(t, "reverse", 1, 2, 0, model.Options{}), x, full)
		closeTo(t, c.op+" Y forward half", direction(yb, seq, 2, 0), yf, 1e-6)
		closeTo(t, c.op+" Y reverse half", direction(yb, seq, 2, 1), yr, 1e-6)
		closeTo(t, c.op+" Y_h", hb, append(slices.Clone(hf), hr...), 1e-6)
		// reverse(x) == forward(reverse-time x), mirrored
		xr := tensor.From(x.Shape, reverseTime(x.Data.([]float32), seq))
		yf1, hf1 := runRecurrent(t, cw.model(t, "forward", 1, 2, 0, model.Options{}), xr, full)
		closeTo(t, c.op+" reverse vs forward on reversed input", reverseTime(yf1, seq), yr, 1e-5)
		closeTo(t, c.op+" reverse vs forward Y_h", hf1, hr, 1e-5)
		// layout 1: X [batch, seq, k], Y [batch, seq, dirs, h]
		xb := make([]float32, x.Len())
		for s := 0; s < seq; s++ {
			for b := 0; b < batch; b++ {
				copy(xb[(b*seq+s)*input:], x.Data.([]float32)[(s*batch+b)*input:(s*batch+b+1)*input])
			}
		}
		yl, _ := runRecurrent(t, cw.model(t, "bidirectional", 0, 2, 1, model.Options{}), tensor.From([]int{batch, seq, input}, xb), full)
		for s := 0; s < seq; s++ {
			for d := 0; d < 2; d++ {
				for b := 0; b < batch; b++ {
					got := yl[((b*seq+s)*2+d)*hidden : ((b*seq+s)*2+d+1)*hidden]
					want := yb[((s*2+d)*batch+b)*hidden : ((s*2+d)*batch+b+1)*hidden]
					closeTo(t, c.op+" layout 1", got, want, 1e-6)
				}
			}
		}
		// sequence_lens: entry 1 runs 2 steps; outputs after it are zero
		ys, hs := runRecurrent(t, cw.model(t, "bidirectional", 0, 2, 0, model.Options{}), x, []int32{seq, 2, seq})
		xs := make([]float32, 2*input)
		for s := 0; s < 2; s++ {
			copy(xs[s*input:], x.Data.([]float32)[(s*batch+1)*input:(s*batch+2)*input])
		}
		ya, ha := runRecurrent(t, cw.model(t, "bidirectional", 0, 2, 0, model.Options{}), tensor.From([]int{2, 1, input}, xs), []int32{2})
		for s := 0; s < seq; s++ {
			for d := 0; d < 2; d++ {
				got := ys[((s*2+d)*batch+1)*hidden : ((s*2+d)*batch+2)*hidden]
				if s >= 2 {
					closeTo(t, c.op+" Y past sequence_lens", got, make([]float32, hidden), 0)
					continue
				}
				closeTo(t, c.op+" Y within sequence_lens", got, ya[(s*2+d)*hidden:(s*2+d+1)*hidden], 1e-6)
			}
		}
		for d := 0; d < 2; d++ {
			closeTo(t, c.op+" Y_h with sequence_lens", hs[(d*batch+1)*hidden:(d*batch+2)*hidden], ha[d*hidden:(d+1)*hidden], 1e-6)
		}
	}
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
		q := cw.model(t, "bidirectional", 0, 2, 0, model.Options{Quantize: true, Scheme: quant.PerChannel})
		if len(q.Layers) != 1 || q.Layers[0].Kernels != "int8 per_channel (input projections; recurrent products float32)" {
			t.Fatalf("%s layers: %+v", c.op, q.Layers)
		}
		yq, _ := runRecurrent(t, q, x, []int32{seq, seq})
		yf, _ := runRecurrent(t, cw.model(t, "bidirectional", 0, 2, 0, model.Options{}), x, []int32{seq, seq})
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
	m := cw.model(t, "forward", 0, 1, 0, model.Options{})
	for name, in := range map[string]map[string]*tensor.Tensor{
		"input size": {"X": tensor.From([]int{2, 1, 3}, make([]float32, 6)), "lens": tensor.From([]int{1}, []int32{2})},
		"rank":       {"X": tensor.From([]int{2, 2}, make([]float32, 4)), "lens": tensor.From([]int{1}, []int32{2})},
		"long lens":  {"X": tensor.From([]int{2, 1, 2}, make([]float32, 4)), "lens": tensor.From([]int{1}, []int32{3})},
		"lens count": {"X": tensor.From([]int{2, 1, 2}, make([]float32, 4)), "lens": tensor.From([]int{2}, []int32{2, 2})},
	} {
		if _, err := m.Run(context.Background(), in, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
