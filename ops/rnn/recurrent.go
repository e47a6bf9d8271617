package rnn

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// RecurrentAttrs are the attributes RNN, GRU and LSTM share.
type RecurrentAttrs struct {
	ActivationAlpha []float32 `onnx:"activation_alpha"`
	ActivationBeta  []float32 `onnx:"activation_beta"`
	Activations     []string  `onnx:"activations"`
	Clip            *float32  `onnx:"clip"`
	Direction       string    `onnx:"direction" default:"forward"`
	HiddenSize      *int64    `onnx:"hidden_size"`
	Layout          int64     `onnx:"layout"`
}

type cellKind int

const (
	cellRNN cellKind = iota
	cellGRU
	cellLSTM
)

// cellSpec is what distinguishes RNN, GRU and LSTM in the recurrence.
type cellSpec struct {
	kind              cellKind
	gates             int // weight blocks: 1, 3 (z r h) or 4 (i o f c)
	acts              int // activation functions per direction
	linearBeforeReset bool
	inputForget       bool
}

// recurrent is a compiled RNN, GRU or LSTM node.
type recurrent struct {
	cell    cellSpec
	layout  int64 // 0: [seq, batch, ...]; 1: [batch, seq, ...]
	dirs    int   // 1 or 2
	reverse bool  // direction "reverse" (with dirs == 1)
	hidden  int
	acts    [][]gateAct // per direction
	clip    float32
	scheme  quant.Scheme
	// Constant weights packed at load, per direction; nil when W or R is
	// an input computed per request.
	w, r []*gateWeights
	// GRU without linear_before_reset multiplies (r⊙h) by Rh alone.
	rzr, rh []*gateWeights
}

func buildRecurrent(n *ops.Node, cell cellSpec, at *RecurrentAttrs) (ops.Operator, error) {
	maxIn, maxOut := 6, 2
	if cell.kind == cellLSTM {
		maxIn, maxOut = 8, 3
	}
	if err := n.CheckArity(3, maxIn, 0, maxOut); err != nil {
		return nil, err
	}
	rc := &recurrent{cell: cell, layout: at.Layout, scheme: n.Scheme, dirs: 1}
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
		var fs []gateAct
		for _, name := range names[d*cell.acts : (d+1)*cell.acts] {
			f, err := gateActivation(name, &alphas, &betas)
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
	return rc, nil
}

// packConstants prepares W and R when they are initializers.
func (rc *recurrent) packConstants(n *ops.Node) error {
	w, r := n.Const(1), n.Const(2)
	if w == nil || r == nil || w.DType != tensor.Float32 || r.DType != tensor.Float32 {
		return nil // packed per request
	}
	gh := rc.cell.gates * rc.hidden
	if w.Rank() != 3 || w.Shape[0] != rc.dirs || w.Shape[1] != gh || r.Rank() != 3 || r.Shape[0] != rc.dirs || r.Shape[1] != gh || r.Shape[2] != rc.hidden {
		return fmt.Errorf("weights W%s and R%s do not fit %d directions of %d gates of %d", tensor.ShapeString(w.Shape), tensor.ShapeString(r.Shape), rc.dirs, rc.cell.gates, rc.hidden)
	}
	keep := n.KeepFloat()
	var err error
	if rc.w, rc.r, rc.rzr, rc.rh, err = rc.pack(w, r, n.Quantize && keep == ""); err != nil {
		return err
	}
	kernels := "float32"
	if rc.w[0].q != nil {
		kernels = "int8 " + rc.scheme.String()
	} else if keep != "" {
		kernels = "float32 (" + keep + ")"
	}
	n.AddLayer(w.Shape[2], gh, kernels+" (input projections; recurrent products float32)")
	n.HoldInputs(1, 2)
	return nil
}

// pack packs W and R per direction: W for the input projections (int8
// when quantize is set), R for the recurrent products (float32), split
// into the z and r gates and the h gate for GRU without
// linear_before_reset.
func (rc *recurrent) pack(w, r *tensor.Tensor, quantize bool) (ws, rs, rzr, rh []*gateWeights, err error) {
	gh, k, h := rc.cell.gates*rc.hidden, w.Shape[2], rc.hidden
	wd, rd := w.Data.([]float32), r.Data.([]float32)
	for d := 0; d < rc.dirs; d++ {
		gw, _, err := newGateWeights(wd[d*gh*k:(d+1)*gh*k], gh, k, quantize, rc.scheme)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		ws = append(ws, gw)
		rdd := rd[d*gh*h : (d+1)*gh*h]
		if rc.cell.kind == cellGRU && !rc.cell.linearBeforeReset {
			zr, _, err := newGateWeights(rdd[:2*h*h], 2*h, h, false, rc.scheme)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			hh, _, err := newGateWeights(rdd[2*h*h:], h, h, false, rc.scheme)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			rzr, rh = append(rzr, zr), append(rh, hh)
			rs = append(rs, nil)
			continue
		}
		gr, _, err := newGateWeights(rdd, gh, h, false, rc.scheme)
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
		c, err := tensorops.CastTo(t, tensor.Float32)
		if err != nil {
			return nil, err
		}
		return c.Data.([]float32), nil
	}
	return nil, ops.InputErrorf("%s must be a floating-point tensor, got %v", what, t.DType)
}

// Run computes Y and Y_h (and LSTM's Y_c) from X, W, R and the optional
// B, sequence_lens, initial_h (and LSTM's initial_c and P).
func (rc *recurrent) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if x.Rank() != 3 {
		return nil, ops.InputErrorf("X must have rank 3, got %s", tensor.ShapeString(x.Shape))
	}
	seq, batch, k := x.Shape[0], x.Shape[1], x.Shape[2]
	if rc.layout == 1 {
		seq, batch = x.Shape[1], x.Shape[0]
	}
	h, gh, dirs := rc.hidden, rc.cell.gates*rc.hidden, rc.dirs
	xv, err := floats32(x, "X")
	if err != nil {
		return nil, err
	}
	if rc.layout == 1 { // [batch, seq, k] -> [seq, batch, k]
		xv = permute3(xv, batch, seq, k)
	}
	ws, rs, rzr, rhs := rc.w, rc.r, rc.rzr, rc.rh
	if ws == nil {
		w, r := in[1], in[2]
		if w.Rank() != 3 || w.Shape[0] != dirs || w.Shape[1] != gh || w.Shape[2] != k || r.Rank() != 3 || r.Shape[0] != dirs || r.Shape[1] != gh || r.Shape[2] != h {
			return nil, ops.InputErrorf("W%s and R%s do not fit %d directions, %d gates of %d, input size %d", tensor.ShapeString(w.Shape), tensor.ShapeString(r.Shape), dirs, rc.cell.gates, h, k)
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
		return nil, ops.InputErrorf("X has input size %d, the weights take %d", k, ws[0].k)
	}
	// Optional inputs: B, sequence_lens, initial_h (and LSTM's initial_c, P).
	var bias []float32
	if b := ops.Optional(in, 3); b != nil {
		if bias, err = floats32(b, "B"); err != nil {
			return nil, err
		}
		if len(bias) != dirs*2*gh {
			return nil, ops.InputErrorf("B has %d values, want %d", len(bias), dirs*2*gh)
		}
	}
	lens := make([]int, batch)
	for i := range lens {
		lens[i] = seq
	}
	if sl := ops.Optional(in, 4); sl != nil {
		v, err := sl.Int64s()
		if err != nil || len(v) != batch {
			return nil, ops.InputErrorf("sequence_lens must hold one integer per batch entry (%d)", batch)
		}
		for i, l := range v {
			if l < 0 || l > int64(seq) {
				return nil, ops.InputErrorf("sequence_lens[%d] = %d is outside [0, %d]", i, l, seq)
			}
			lens[i] = int(l)
		}
	}
	state := func(i int, what string) ([]float32, error) {
		t := ops.Optional(in, i)
		if t == nil {
			return make([]float32, dirs*batch*h), nil
		}
		v, err := floats32(t, what)
		if err != nil {
			return nil, err
		}
		if len(v) != dirs*batch*h {
			return nil, ops.InputErrorf("%s has %d values, want %d", what, len(v), dirs*batch*h)
		}
		if rc.layout == 1 { // [batch, dirs, h] -> [dirs, batch, h]
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
		if p := ops.Optional(in, 7); p != nil {
			if peep, err = floats32(p, "P"); err != nil {
				return nil, err
			}
			if len(peep) != dirs*3*h {
				return nil, ops.InputErrorf("P has %d values, want %d", len(peep), dirs*3*h)
			}
		}
	}
	if _, err := tensor.NumElements([]int{seq, dirs, batch, h}); err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	y := make([]float32, seq*dirs*batch*h)
	xw := make([]float32, seq*batch*gh)
	for d := 0; d < dirs; d++ {
		if err := ws[d].mul(c.Engine(), xv, seq*batch, xw); err != nil {
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
		if err := rc.direction(c, d, back, seq, batch, lens, xw, wb, rb, pd, hs[d*batch*h:(d+1)*batch*h], cd, rfull, rzrD, rhD, y); err != nil {
			return nil, err
		}
	}
	// Outputs, in the requested layout.
	yShape, hShape := []int{seq, dirs, batch, h}, []int{dirs, batch, h}
	if rc.layout == 1 {
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
			if outs[i], err = tensorops.CastTo(o, x.DType); err != nil {
				return nil, err
			}
		}
	}
	return outs, nil
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
