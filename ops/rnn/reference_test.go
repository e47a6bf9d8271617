package rnn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// refActivation is an RNN activation function in float64, by its ONNX
// name, taking its alpha and beta from the lists as activation does.
func refActivation(t *testing.T, name string, alphas, betas *[]float64) func(float64) float64 {
	take := func(list *[]float64, def float64) float64 {
		if len(*list) == 0 {
			return def
		}
		v := (*list)[0]
		*list = (*list)[1:]
		return v
	}
	switch strings.ToLower(name) {
	case "sigmoid":
		return func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	case "tanh":
		return math.Tanh
	case "relu":
		return func(x float64) float64 { return math.Max(x, 0) }
	case "leakyrelu":
		a := take(alphas, 0.01)
		return func(x float64) float64 {
			if x < 0 {
				return a * x
			}
			return x
		}
	case "hardsigmoid":
		a, b := take(alphas, 0.2), take(betas, 0.5)
		return func(x float64) float64 { return math.Min(math.Max(a*x+b, 0), 1) }
	case "softsign":
		return func(x float64) float64 { return x / (1 + math.Abs(x)) }
	}
	t.Fatalf("no reference for activation %q", name)
	return nil
}

// refCell holds one forward layer's weights and options in float64, as
// ONNX's operator definitions state the recurrences (gate order: RNN one,
// GRU z r h, LSTM i o f c; P: i o f).
type refCell struct {
	op                         string
	h, k                       int
	w, r, wb, rb, p            []float64
	acts                       []func(float64) float64
	clip                       float64 // 0: none
	linearBeforeReset, coupled bool
}

// dot returns row j of m (cols values a row) times v.
func dot(m []float64, j, cols int, v []float64) float64 {
	var s float64
	for i := 0; i < cols; i++ {
		s += m[j*cols+i] * v[i]
	}
	return s
}

// run steps the cell over one sequence x (seq rows of k) from h0 (and
// c0) and returns the hidden state after every step, then the last cell.
func (c *refCell) run(x [][]float64, h0, c0 []float64) (hs [][]float64, cell []float64) {
	hid := c.h
	hp, cp := append([]float64(nil), h0...), append([]float64(nil), c0...)
	clip := func(v float64) float64 {
		if c.clip > 0 {
			return math.Min(math.Max(v, -c.clip), c.clip)
		}
		return v
	}
	// pre is gate g's pre-activation at j without the recurrent term.
	pre := func(xt []float64, g, j int) float64 {
		return dot(c.w, g*hid+j, c.k, xt) + c.wb[g*hid+j] + c.rb[g*hid+j]
	}
	rec := func(g, j int, v []float64) float64 { return dot(c.r, g*hid+j, hid, v) }
	f, g := c.acts[0], c.acts[min(1, len(c.acts)-1)]
	for _, xt := range x {
		next := make([]float64, hid)
		switch c.op {
		case "RNN":
			for j := range next {
				next[j] = f(clip(pre(xt, 0, j) + rec(0, j, hp)))
			}
		case "GRU":
			z, r := make([]float64, hid), make([]float64, hid)
			for j := range z {
				z[j] = f(clip(pre(xt, 0, j) + rec(0, j, hp)))
				r[j] = f(clip(pre(xt, 1, j) + rec(1, j, hp)))
			}
			rh := make([]float64, hid)
			for j := range rh {
				rh[j] = r[j] * hp[j]
			}
			for j := range next {
				var hc float64
				if c.linearBeforeReset {
					hc = g(clip(dot(c.w, 2*hid+j, c.k, xt) + c.wb[2*hid+j] + r[j]*(rec(2, j, hp)+c.rb[2*hid+j])))
				} else {
					hc = g(clip(pre(xt, 2, j) + rec(2, j, rh)))
				}
				next[j] = (1-z[j])*hc + z[j]*hp[j]
			}
		case "LSTM":
			hf := c.acts[2]
			nc := make([]float64, hid)
			for j := range next {
				i := f(clip(pre(xt, 0, j) + rec(0, j, hp) + c.p[j]*cp[j]))
				fg := f(clip(pre(xt, 2, j) + rec(2, j, hp) + c.p[2*hid+j]*cp[j]))
				if c.coupled {
					fg = 1 - i
				}
				ct := g(clip(pre(xt, 3, j) + rec(3, j, hp)))
				nc[j] = fg*cp[j] + i*ct
				o := f(clip(pre(xt, 1, j) + rec(1, j, hp) + c.p[hid+j]*nc[j]))
				next[j] = o * hf(nc[j])
			}
			cp = nc
		}
		hp = next
		hs = append(hs, next)
	}
	return hs, cp
}

// TestRecurrentMatchesReference runs RNN, GRU and LSTM forward layers,
// with bias, initial states, peepholes, clip, input_forget,
// linear_before_reset and activations other than the defaults, against
// the recurrences in float64: Y, Y_h (and Y_c) within 2e-5.
func TestRecurrentMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const seq, batch, input, hidden = 5, 2, 7, 19 // hidden: tails past the kernels' lanes
	f64 := func(v []float32) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		op    string
		gates int
		acts  []string
		alpha []float32
		beta  []float32
		extra []*onnxpb.Attribute
	}{
		{name: "RNN", op: "RNN", gates: 1, acts: []string{"Tanh"}},
		{name: "RNN relu clip", op: "RNN", gates: 1, acts: []string{"Relu"}, extra: []*onnxpb.Attribute{opstest.AttrFloat("clip", 0.9)}},
		{name: "GRU", op: "GRU", gates: 3, acts: []string{"Sigmoid", "Tanh"}},
		{name: "GRU linear_before_reset", op: "GRU", gates: 3, acts: []string{"Sigmoid", "Tanh"}, extra: []*onnxpb.Attribute{opstest.AttrInt("linear_before_reset", 1)}},
		{name: "GRU hardsigmoid leakyrelu clip", op: "GRU", gates: 3, acts: []string{"HardSigmoid", "LeakyRelu"}, alpha: []float32{0.3, 0.05}, beta: []float32{0.45},
			extra: []*onnxpb.Attribute{opstest.AttrFloat("clip", 1.2)}},
		{name: "LSTM", op: "LSTM", gates: 4, acts: []string{"Sigmoid", "Tanh", "Tanh"}},
		{name: "LSTM input_forget clip", op: "LSTM", gates: 4, acts: []string{"Sigmoid", "Tanh", "Tanh"},
			extra: []*onnxpb.Attribute{opstest.AttrInt("input_forget", 1), opstest.AttrFloat("clip", 0.8)}},
		{name: "LSTM softsign", op: "LSTM", gates: 4, acts: []string{"Sigmoid", "Softsign", "Tanh"}},
	} {
		extra := append([]*onnxpb.Attribute{opstest.AttrStrings("activations", c.acts...)}, c.extra...)
		if c.alpha != nil {
			extra = append(extra, opstest.AttrFloats("activation_alpha", c.alpha...))
		}
		if c.beta != nil {
			extra = append(extra, opstest.AttrFloats("activation_beta", c.beta...))
		}
		cw := newCellWeights(r, c.op, c.gates, hidden, input, extra...)
		l := cw.layer("forward", 0, 1, 0)
		x := randFloats(r, 1, seq, batch, input)
		in := l.inputs(x, []int32{seq, seq})
		h0 := randFloats(r, 0.5, 1, batch, hidden)
		if len(in) < 6 {
			in = append(in, nil)
		}
		in[5] = h0
		var c0 *tensor.Tensor
		if c.op == "LSTM" {
			c0 = randFloats(r, 0.5, 1, batch, hidden)
			in[6] = c0
		}
		out, err := opstest.Run(t, l.node, in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		gh := c.gates * hidden
		b := f64(cw.b.Data.([]float32)[:2*gh])
		ref := refCell{op: c.op, h: hidden, k: input, w: f64(cw.w.Data.([]float32)[:gh*input]), r: f64(cw.r.Data.([]float32)[:gh*hidden]),
			wb: b[:gh], rb: b[gh:], p: f64(cw.p.Data.([]float32)[:3*hidden])}
		alphas, betas := f64(c.alpha), f64(c.beta)
		for _, a := range c.acts {
			ref.acts = append(ref.acts, refActivation(t, a, &alphas, &betas))
		}
		for _, a := range c.extra {
			switch a.Name {
			case "clip":
				ref.clip = float64(a.F)
			case "linear_before_reset":
				ref.linearBeforeReset = a.I == 1
			case "input_forget":
				ref.coupled = a.I == 1
			}
		}
		y, yh := out[0].Data.([]float32), out[1].Data.([]float32)
		xv := x.Data.([]float32)
		worst := 0.0
		near := func(what string, got float32, want float64) {
			d := math.Abs(float64(got) - want)
			worst = max(worst, d)
			if d > 2e-5 {
				t.Errorf("%s %s: %v, reference %v", c.name, what, got, want)
			}
		}
		for bi := 0; bi < batch; bi++ {
			xs := make([][]float64, seq)
			for s := range xs {
				xs[s] = f64(xv[(s*batch+bi)*input : (s*batch+bi+1)*input])
			}
			var cs []float64
			if c0 != nil {
				cs = f64(c0.Data.([]float32)[bi*hidden : (bi+1)*hidden])
			} else {
				cs = make([]float64, hidden)
			}
			hs, cell := ref.run(xs, f64(h0.Data.([]float32)[bi*hidden:(bi+1)*hidden]), cs)
			for s := range hs {
				for j, v := range hs[s] {
					near("Y", y[(s*batch+bi)*hidden+j], v)
				}
			}
			for j, v := range hs[seq-1] {
				near("Y_h", yh[bi*hidden+j], v)
			}
			if c.op == "LSTM" {
				for j, v := range cell {
					near("Y_c", out[2].Data.([]float32)[bi*hidden+j], v)
				}
			}
		}
		t.Logf("%s: largest difference %.2g", c.name, worst)
	}
}
