package model

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// Recurrent layers: RNN, GRU and LSTM. The input projections of every time
// step run as one product per direction, on the int8 kernels when W is
// constant and large enough (as MatMul's weights do); the recurrent
// products run once per step on the float kernels: int8 error there would
// compound from step to step.

func init() {
	register(Descriptor{Type: "RNN", Since: 7, Fold: true}, func(n *node, at *RNNAttrs) (opFunc, error) {
		return buildRecurrent(n, rnnCell, &at.recurrentAttrs)
	})
	register(Descriptor{Type: "GRU", Since: 7, Fold: true}, func(n *node, at *GRUAttrs) (opFunc, error) {
		return buildRecurrent(n, cellSpec{kind: cellGRU, gates: 3, acts: 2, linearBeforeReset: at.LinearBeforeReset}, &at.recurrentAttrs)
	})
	register(Descriptor{Type: "LSTM", Since: 7, Fold: true}, func(n *node, at *LSTMAttrs) (opFunc, error) {
		return buildRecurrent(n, cellSpec{kind: cellLSTM, gates: 4, acts: 3, inputForget: at.InputForget}, &at.recurrentAttrs)
	})
}

// recurrentAttrs are the attributes RNN, GRU and LSTM share.
type recurrentAttrs struct {
	ActivationAlpha []float32 `onnx:"activation_alpha"`
	ActivationBeta  []float32 `onnx:"activation_beta"`
	Activations     []string  `onnx:"activations"`
	Clip            *float32  `onnx:"clip"`
	Direction       string    `onnx:"direction" default:"forward"`
	HiddenSize      *int64    `onnx:"hidden_size"`
	Layout          int64     `onnx:"layout"`
}

// RNNAttrs are RNN's attributes.
type RNNAttrs struct{ recurrentAttrs }

// GRUAttrs are GRU's attributes.
type GRUAttrs struct {
	recurrentAttrs
	LinearBeforeReset bool `onnx:"linear_before_reset"`
}

// LSTMAttrs are LSTM's attributes.
type LSTMAttrs struct {
	recurrentAttrs
	InputForget bool `onnx:"input_forget"`
}

type cellKind int

const (
	cellRNN cellKind = iota
	cellGRU
	cellLSTM
)

type cellSpec struct {
	kind              cellKind
	gates             int // weight blocks: 1, 3 (z r h) or 4 (i o f c)
	acts              int // activation functions per direction
	linearBeforeReset bool
	inputForget       bool
}

var rnnCell = cellSpec{kind: cellRNN, gates: 1, acts: 1}

var defaultActivations = map[cellKind][]string{
	cellRNN:  {"Tanh"},
	cellGRU:  {"Sigmoid", "Tanh"},
	cellLSTM: {"Sigmoid", "Tanh", "Tanh"},
}

// activation returns the scalar function an RNN activation name denotes,
// taking alpha/beta from the lists as ONNX specifies (in order, for the
// functions that have them).
func rnnActivation(name string, alphas, betas *[]float32) (func(float32) float32, error) {
	take := func(list *[]float32, def float32) float32 {
		if len(*list) == 0 {
			return def
		}
		v := (*list)[0]
		*list = (*list)[1:]
		return v
	}
	switch strings.ToLower(name) {
	case "relu":
		return func(x float32) float32 { return max(x, 0) }, nil
	case "tanh":
		return func(x float32) float32 { return float32(math.Tanh(float64(x))) }, nil
	case "sigmoid":
		return func(x float32) float32 { return float32(sigmoid(float64(x))) }, nil
	case "affine":
		a, b := take(alphas, 1), take(betas, 0)
		return func(x float32) float32 { return a*x + b }, nil
	case "leakyrelu":
		a := take(alphas, 0.01)
		return func(x float32) float32 {
			if x < 0 {
				return a * x
			}
			return x
		}, nil
	case "thresholdedrelu":
		a := take(alphas, 1)
		return func(x float32) float32 {
			if x > a {
				return x
			}
			return 0
		}, nil
	case "scaledtanh":
		a, b := take(alphas, 1), take(betas, 1)
		return func(x float32) float32 { return a * float32(math.Tanh(float64(b*x))) }, nil
	case "hardsigmoid":
		a, b := take(alphas, 0.2), take(betas, 0.5)
		return func(x float32) float32 { return min(max(a*x+b, 0), 1) }, nil
	case "elu":
		a := take(alphas, 1)
		return func(x float32) float32 {
			if x < 0 {
				return a * float32(math.Expm1(float64(x)))
			}
			return x
		}, nil
	case "softsign":
		return func(x float32) float32 { return x / (1 + float32(math.Abs(float64(x)))) }, nil
	case "softplus":
		return func(x float32) float32 { return float32(math.Log1p(math.Exp(float64(x)))) }, nil
	}
	return nil, unsupportedf("recurrent activation %q", name)
}

// gateWeights is one direction's weight matrix (gates·hidden × k, as ONNX
// stores W and R), prepared for products x·Wᵀ.
type gateWeights struct {
	exec *gemm.Engine
	k, n int
	q    *gemm.QWeights
	f    *gemm.FWeights
}

// newGateWeights packs w (n rows of k) transposed for the kernels: int8
// when quantize is set and the weight is large enough.
func newGateWeights(exec *gemm.Engine, w []float32, n, k int, quantize bool, scheme quant.Scheme) (*gateWeights, string, error) {
	wt := make([]float32, k*n) // k×n
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			wt[j*n+i] = w[i*k+j]
		}
	}
	g := &gateWeights{exec: exec, k: k, n: n}
	if quantize && k*n >= MinQuantizedWeights && k <= gemm.MaxQK {
		qw, err := quant.QuantizeWeights(wt, k, n, scheme)
		if err != nil {
			return nil, "", err
		}
		if g.q, err = gemm.PackQ(qw); err != nil {
			return nil, "", err
		}
		return g, "int8 " + scheme.String(), nil
	}
	g.f = gemm.PackF(k, n, wt, n)
	return g, "float32", nil
}

// mul computes out (m×n) = a (m×k) · Wᵀ.
func (g *gateWeights) mul(a []float32, m int, out []float32) error {
	if m == 0 {
		return nil
	}
	if g.q != nil {
		if err := g.exec.QMatMul(a, m, g.q, out); err != nil {
			if errors.Is(err, gemm.ErrNotFinite) {
				return inputErrorf("%v", err)
			}
			return err
		}
		return nil
	}
	return g.exec.MatMul(a, m, g.f, out)
}

// recurrent is a compiled RNN, GRU or LSTM node.
type recurrent struct {
	cell    cellSpec
	attrs   *recurrentAttrs
	dirs    int  // 1 or 2
	reverse bool // direction "reverse" (with dirs == 1)
	hidden  int
	acts    [][]func(float32) float32 // per direction
	clip    float32
	exec    *gemm.Engine
	opts    *Options
	// Constant weights packed at load, per direction; nil when W or R is
	// an input computed per request.
	w, r []*gateWeights
	// GRU without linear_before_reset multiplies (r⊙h) by Rh alone.
	rzr, rh []*gateWeights
}

func buildRecurrent(n *node, cell cellSpec, at *recurrentAttrs) (opFunc, error) {
	maxIn, maxOut := 6, 2
	if cell.kind == cellLSTM {
		maxIn, maxOut = 8, 3
	}
	if err := n.checkArity(3, maxIn, 0, maxOut); err != nil {
		return nil, err
	}
	rc := &recurrent{cell: cell, attrs: at, exec: n.opts.Exec, opts: n.opts, dirs: 1}
	switch at.Direction {
	case "forward":
	case "reverse":
		rc.reverse = true
	case "bidirectional":
		rc.dirs = 2
	default:
		return nil, fmt.Errorf("direction %q is not forward, reverse or bidirectional", at.Direction)
	}
	if at.Layout != 0 && at.Layout != 1 {
		return nil, fmt.Errorf("layout %d is not 0 or 1", at.Layout)
	}
	if at.HiddenSize == nil || *at.HiddenSize < 1 || *at.HiddenSize > 1<<20 {
		return nil, fmt.Errorf("needs a positive hidden_size attribute")
	}
	rc.hidden = int(*at.HiddenSize)
	rc.clip = float32(math.Inf(1))
	if at.Clip != nil {
		rc.clip = *at.Clip
	}
	names := at.Activations
	if names == nil {
		for range rc.dirs {
			names = append(names, defaultActivations[cell.kind]...)
		}
	}
	if len(names) != cell.acts*rc.dirs {
		return nil, fmt.Errorf("has %d activations, want %d", len(names), cell.acts*rc.dirs)
	}
	alphas, betas := append([]float32(nil), at.ActivationAlpha...), append([]float32(nil), at.ActivationBeta...)
	for d := 0; d < rc.dirs; d++ {
		var fs []func(float32) float32
		for _, name := range names[d*cell.acts : (d+1)*cell.acts] {
			f, err := rnnActivation(name, &alphas, &betas)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		rc.acts = append(rc.acts, fs)
	}
	if err := rc.packConstants(n); err != nil {
		return nil, err
	}
	return rc.run, nil
}

// packConstants prepares W and R when they are initializers.
func (rc *recurrent) packConstants(n *node) error {
	w, r := n.consts[1], n.consts[2]
	if w == nil || r == nil || w.DType != tensor.Float32 || r.DType != tensor.Float32 {
		return nil // packed per request
	}
	gh := rc.cell.gates * rc.hidden
	if w.Rank() != 3 || w.Shape[0] != rc.dirs || w.Shape[1] != gh || r.Rank() != 3 || r.Shape[0] != rc.dirs || r.Shape[1] != gh || r.Shape[2] != rc.hidden {
		return fmt.Errorf("weights W%s and R%s do not fit %d directions of %d gates of %d", tensor.ShapeString(w.Shape), tensor.ShapeString(r.Shape), rc.dirs, rc.cell.gates, rc.hidden)
	}
	var err error
	if rc.w, rc.r, rc.rzr, rc.rh, err = rc.pack(w, r, rc.opts.Quantize); err != nil {
		return err
	}
	kernels := "float32"
	if rc.w[0].q != nil {
		kernels = "int8 " + rc.opts.Scheme.String()
	}
	n.model.Layers = append(n.model.Layers, Layer{Node: n.name, Op: n.pb.OpType, K: w.Shape[2], N: gh, Kernels: kernels + " (input projections; recurrent products float32)"})
	n.unused[1], n.unused[2] = true, true
	return nil
}

func (rc *recurrent) pack(w, r *tensor.Tensor, quantize bool) (ws, rs, rzr, rh []*gateWeights, err error) {
	gh, k, h := rc.cell.gates*rc.hidden, w.Shape[2], rc.hidden
	wd, rd := w.Data.([]float32), r.Data.([]float32)
	for d := 0; d < rc.dirs; d++ {
		gw, _, err := newGateWeights(rc.exec, wd[d*gh*k:(d+1)*gh*k], gh, k, quantize, rc.opts.Scheme)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		ws = append(ws, gw)
		rdd := rd[d*gh*h : (d+1)*gh*h]
		if rc.cell.kind == cellGRU && !rc.cell.linearBeforeReset {
			zr, _, err := newGateWeights(rc.exec, rdd[:2*h*h], 2*h, h, false, rc.opts.Scheme)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			hh, _, err := newGateWeights(rc.exec, rdd[2*h*h:], h, h, false, rc.opts.Scheme)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			rzr, rh = append(rzr, zr), append(rh, hh)
			rs = append(rs, nil)
			continue
		}
		gr, _, err := newGateWeights(rc.exec, rdd, gh, h, false, rc.opts.Scheme)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rs = append(rs, gr)
	}
	return ws, rs, rzr, rh, nil
}

// floats32 returns a float tensor's values as float32 (FP16, BF16 and FP64
// are computed in float32).
func floats32(t *tensor.Tensor, what string) ([]float32, error) {
	switch d := t.Data.(type) {
	case []float32:
		return d, nil
	case []float64, []tensor.F16, []tensor.BF16:
		c, err := castTo(t, tensor.Float32)
		if err != nil {
			return nil, err
		}
		return c.Data.([]float32), nil
	}
	return nil, inputErrorf("%s must be a floating-point tensor, got %v", what, t.DType)
}

func (rc *recurrent) run(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() != 3 {
		return nil, inputErrorf("X must have rank 3, got %s", tensor.ShapeString(x.Shape))
	}
	seq, batch, k := x.Shape[0], x.Shape[1], x.Shape[2]
	if rc.attrs.Layout == 1 {
		seq, batch = x.Shape[1], x.Shape[0]
	}
	h, gh, dirs := rc.hidden, rc.cell.gates*rc.hidden, rc.dirs
	xv, err := floats32(x, "X")
	if err != nil {
		return nil, err
	}
	if rc.attrs.Layout == 1 { // [batch, seq, k] -> [seq, batch, k]
		xv = permute3(xv, batch, seq, k)
	}
	ws, rs, rzr, rhs := rc.w, rc.r, rc.rzr, rc.rh
	if ws == nil {
		w, r := in[1], in[2]
		if w.Rank() != 3 || w.Shape[0] != dirs || w.Shape[1] != gh || w.Shape[2] != k || r.Rank() != 3 || r.Shape[0] != dirs || r.Shape[1] != gh || r.Shape[2] != h {
			return nil, inputErrorf("W%s and R%s do not fit %d directions, %d gates of %d, input size %d", tensor.ShapeString(w.Shape), tensor.ShapeString(r.Shape), dirs, rc.cell.gates, h, k)
		}
		wf, err := floats32(w, "W")
		if err != nil {
			return nil, err
		}
		rf, err := floats32(r, "R")
		if err != nil {
			return nil, err
		}
		if ws, rs, rzr, rhs, err = rc.pack(tensor.From(w.Shape, wf), tensor.From(r.Shape, rf), false); err != nil {
			return nil, err
		}
	} else if ws[0].k != k {
		return nil, inputErrorf("X has input size %d, the weights take %d", k, ws[0].k)
	}
	// Optional inputs: B, sequence_lens, initial_h (and LSTM's initial_c, P).
	var bias []float32
	if b := optionalInput(in, 3); b != nil {
		if bias, err = floats32(b, "B"); err != nil {
			return nil, err
		}
		if len(bias) != dirs*2*gh {
			return nil, inputErrorf("B has %d values, want %d", len(bias), dirs*2*gh)
		}
	}
	lens := make([]int, batch)
	for i := range lens {
		lens[i] = seq
	}
	if sl := optionalInput(in, 4); sl != nil {
		v, err := sl.Int64s()
		if err != nil || len(v) != batch {
			return nil, inputErrorf("sequence_lens must hold one integer per batch entry (%d)", batch)
		}
		for i, l := range v {
			if l < 0 || l > int64(seq) {
				return nil, inputErrorf("sequence_lens[%d] = %d is outside [0, %d]", i, l, seq)
			}
			lens[i] = int(l)
		}
	}
	state := func(i int, what string) ([]float32, error) {
		t := optionalInput(in, i)
		if t == nil {
			return make([]float32, dirs*batch*h), nil
		}
		v, err := floats32(t, what)
		if err != nil {
			return nil, err
		}
		if len(v) != dirs*batch*h {
			return nil, inputErrorf("%s has %d values, want %d", what, len(v), dirs*batch*h)
		}
		if rc.attrs.Layout == 1 { // [batch, dirs, h] -> [dirs, batch, h]
			v = permute3(v, batch, dirs, h)
		}
		return append([]float32(nil), v...), nil
	}
	hs, err := state(5, "initial_h")
	if err != nil {
		return nil, err
	}
	var cs, peep []float32
	if rc.cell.kind == cellLSTM {
		if cs, err = state(6, "initial_c"); err != nil {
			return nil, err
		}
		if p := optionalInput(in, 7); p != nil {
			if peep, err = floats32(p, "P"); err != nil {
				return nil, err
			}
			if len(peep) != dirs*3*h {
				return nil, inputErrorf("P has %d values, want %d", len(peep), dirs*3*h)
			}
		}
	}
	if _, err := tensor.NumElements([]int{seq, dirs, batch, h}); err != nil {
		return nil, inputErrorf("%v", err)
	}
	y := make([]float32, seq*dirs*batch*h)
	xw := make([]float32, seq*batch*gh)
	for d := 0; d < dirs; d++ {
		if err := ws[d].mul(xv, seq*batch, xw); err != nil {
			return nil, err
		}
		var wb, rb []float32
		if bias != nil {
			wb, rb = bias[d*2*gh:d*2*gh+gh], bias[d*2*gh+gh:(d+1)*2*gh]
		}
		var pd []float32
		if peep != nil {
			pd = peep[d*3*h : (d+1)*3*h]
		}
		var cd []float32
		if cs != nil {
			cd = cs[d*batch*h : (d+1)*batch*h]
		}
		var rfull, rzrD, rhD *gateWeights
		if rs[d] != nil {
			rfull = rs[d]
		} else {
			rzrD, rhD = rzr[d], rhs[d]
		}
		back := rc.reverse || d == 1
		if err := rc.direction(d, back, seq, batch, lens, xw, wb, rb, pd, hs[d*batch*h:(d+1)*batch*h], cd, rfull, rzrD, rhD, y); err != nil {
			return nil, err
		}
	}
	// Outputs, in the requested layout.
	yShape, hShape := []int{seq, dirs, batch, h}, []int{dirs, batch, h}
	if rc.attrs.Layout == 1 {
		y = permute4(y, seq, dirs, batch, h)
		hs = permute3(hs, dirs, batch, h)
		if cs != nil {
			cs = permute3(cs, dirs, batch, h)
		}
		yShape, hShape = []int{batch, seq, dirs, h}, []int{batch, dirs, h}
	}
	outs := []*tensor.Tensor{tensor.From(yShape, y), tensor.From(hShape, hs)}
	if cs != nil {
		outs = append(outs, tensor.From(hShape, cs))
	}
	if x.DType != tensor.Float32 {
		for i, o := range outs {
			if outs[i], err = castTo(o, x.DType); err != nil {
				return nil, err
			}
		}
	}
	return outs, nil
}

// direction runs one direction over the sequence, updating hd (and cd)
// in place and writing its slice of y.
func (rc *recurrent) direction(d int, back bool, seq, batch int, lens []int, xw, wb, rb, peep, hd, cd []float32, rfull, rzr, rh *gateWeights, y []float32) error {
	h, gh, dirs := rc.hidden, rc.cell.gates*rc.hidden, rc.dirs
	acts := rc.acts[d]
	hr := make([]float32, batch*gh)
	var rhBuf, hh []float32
	if rh != nil {
		rhBuf, hh = make([]float32, batch*h), make([]float32, batch*h)
	}
	gate := make([]float32, gh)
	clip := func(v float32) float32 { return min(max(v, -rc.clip), rc.clip) }
	maxLen := 0
	for _, l := range lens {
		maxLen = max(maxLen, l)
	}
	for step := 0; step < maxLen; step++ {
		if rfull != nil {
			if err := rfull.mul(hd, batch, hr); err != nil {
				return err
			}
		} else { // GRU: z and r gates now, the h gate after the reset
			if err := rzr.mul(hd, batch, hr[:batch*2*h]); err != nil {
				return err
			}
			// hr is laid out batch×(2h) here; spread to batch×(3h).
			for b := batch - 1; b >= 0; b-- {
				copy(hr[b*gh:b*gh+2*h], hr[b*2*h:(b+1)*2*h])
			}
		}
		// Gate pre-activations (without the GRU h gate's recurrent term).
		pre := func(b, t int) []float32 {
			xrow := xw[(t*batch+b)*gh : (t*batch+b+1)*gh]
			for j := range gate {
				v := xrow[j]
				if wb != nil {
					v += wb[j]
				}
				gate[j] = v
			}
			return gate
		}
		if rh != nil {
			// r_t first, for every batch entry, then (r⊙h)·Rhᵀ.
			for b := 0; b < batch; b++ {
				t := step
				if back {
					t = lens[b] - 1 - step
				}
				if step >= lens[b] {
					clear(hh[b*h : (b+1)*h])
					continue
				}
				g := pre(b, t)
				for j := 0; j < h; j++ {
					v := g[h+j] + hr[b*gh+h+j]
					if rb != nil {
						v += rb[h+j]
					}
					hh[b*h+j] = acts[0](clip(v)) * hd[b*h+j]
				}
			}
			if err := rh.mul(hh, batch, rhBuf); err != nil {
				return err
			}
		}
		for b := 0; b < batch; b++ {
			if step >= lens[b] {
				continue
			}
			t := step
			if back {
				t = lens[b] - 1 - step
			}
			g := pre(b, t)
			rrow := hr[b*gh : (b+1)*gh]
			hrow := hd[b*h : (b+1)*h]
			rbAt := func(j int) float32 {
				if rb == nil {
					return 0
				}
				return rb[j]
			}
			switch rc.cell.kind {
			case cellRNN:
				for j := 0; j < h; j++ {
					hrow[j] = acts[0](clip(g[j] + rrow[j] + rbAt(j)))
				}
			case cellGRU:
				for j := 0; j < h; j++ {
					z := acts[0](clip(g[j] + rrow[j] + rbAt(j)))
					r := acts[0](clip(g[h+j] + rrow[h+j] + rbAt(h+j)))
					var hc float32
					if rh != nil {
						hc = acts[1](clip(g[2*h+j] + rhBuf[b*h+j] + rbAt(2*h+j)))
					} else {
						hc = acts[1](clip(g[2*h+j] + r*(rrow[2*h+j]+rbAt(2*h+j))))
					}
					hrow[j] = (1-z)*hc + z*hrow[j]
				}
			case cellLSTM:
				crow := cd[b*h : (b+1)*h]
				for j := 0; j < h; j++ {
					iv := g[j] + rrow[j] + rbAt(j)
					ov := g[h+j] + rrow[h+j] + rbAt(h+j)
					fv := g[2*h+j] + rrow[2*h+j] + rbAt(2*h+j)
					cv := g[3*h+j] + rrow[3*h+j] + rbAt(3*h+j)
					if peep != nil {
						iv += peep[j] * crow[j]
						fv += peep[2*h+j] * crow[j]
					}
					i := acts[0](clip(iv))
					f := acts[0](clip(fv))
					if rc.cell.inputForget {
						f = 1 - i
					}
					c := f*crow[j] + i*acts[1](clip(cv))
					crow[j] = c
					if peep != nil {
						ov += peep[h+j] * c
					}
					hrow[j] = acts[0](clip(ov)) * acts[2](c)
				}
			}
			copy(y[((t*dirs+d)*batch+b)*h:], hrow)
		}
	}
	return nil
}

// permute3 returns a [p, q, r] array laid out as [q, p, r].
func permute3(v []float32, p, q, r int) []float32 {
	out := make([]float32, len(v))
	for i := 0; i < p; i++ {
		for j := 0; j < q; j++ {
			copy(out[(j*p+i)*r:(j*p+i+1)*r], v[(i*q+j)*r:(i*q+j+1)*r])
		}
	}
	return out
}

// permute4 returns Y [seq, dirs, batch, h] laid out as [batch, seq, dirs, h].
func permute4(v []float32, seq, dirs, batch, h int) []float32 {
	out := make([]float32, len(v))
	for t := 0; t < seq; t++ {
		for d := 0; d < dirs; d++ {
			for b := 0; b < batch; b++ {
				copy(out[((b*seq+t)*dirs+d)*h:], v[((t*dirs+d)*batch+b)*h:((t*dirs+d)*batch+b+1)*h])
			}
		}
	}
	return out
}
