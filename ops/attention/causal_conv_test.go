package attention

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// causalConvOp compiles a CausalConvWithState node (two outputs) with the
// given activation for inputs inputs.
func causalConvOp(t testing.TB, activation string, inputs int) runFunc {
	t.Helper()
	n := opstest.Node{Op: "CausalConvWithState", Opset: 27, Outputs: 2, Attrs: []*onnxpb.Attribute{attrStr("activation", activation)}}
	return compiled(compile(t, n, inputs), nil)
}

// TestCausalConvDecodes checks one call against the convolution written
// out in float64, and that feeding a sequence one token at a time,
// carrying present_state into past_state, gives what one call over the
// whole sequence gives.
func TestCausalConvDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	b, c, l, k := 2, 3, 6, 4
	x, w, bias, past := randTensor(r, b, c, l), randTensor(r, c, 1, k), randTensor(r, c), randTensor(r, b, c, k-1)
	op := causalConvOp(t, "silu", 4)
	all, err := op([]*tensor.Tensor{x, w, bias, past})
	if err != nil {
		t.Fatal(err)
	}
	xd, wd, bd, pd := x.Data.([]float32), w.Data.([]float32), bias.Data.([]float32), past.Data.([]float32)
	for ch := 0; ch < b*c; ch++ {
		ci := ch % c
		// the channel's past followed by its input
		seq := append(append([]float32(nil), pd[ch*(k-1):(ch+1)*(k-1)]...), xd[ch*l:(ch+1)*l]...)
		for ti := 0; ti < l; ti++ {
			s := float64(bd[ci])
			for i := 0; i < k; i++ {
				s += float64(wd[ci*k+i]) * float64(seq[ti+i])
			}
			want := s / (1 + math.Exp(-s))
			if got := all[0].Data.([]float32)[ch*l+ti]; math.Abs(float64(got)-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("channel %d token %d = %v, want %v", ch, ti, got, want)
			}
		}
		for i := 0; i < k-1; i++ {
			if got, want := all[1].Data.([]float32)[ch*(k-1)+i], seq[l+i]; got != want {
				t.Fatalf("present_state of channel %d [%d] = %v, want %v", ch, i, got, want)
			}
		}
	}
	state := past
	for ti := 0; ti < l; ti++ {
		xt := make([]float32, b*c)
		for ch := range xt {
			xt[ch] = xd[ch*l+ti]
		}
		o, err := op([]*tensor.Tensor{tensor.From([]int{b, c, 1}, xt), w, bias, state})
		if err != nil {
			t.Fatal(err)
		}
		state = o[1]
		for ch := 0; ch < b*c; ch++ {
			if g, want := o[0].Data.([]float32)[ch], all[0].Data.([]float32)[ch*l+ti]; math.Abs(float64(g-want)) > 1e-6 {
				t.Fatalf("token %d channel %d: %v alone, %v in the sequence", ti, ch, g, want)
			}
		}
	}
	for i, s := range state.Data.([]float32) {
		if s != all[1].Data.([]float32)[i] {
			t.Fatal("the final states differ")
		}
	}
	for name, in := range map[string][]*tensor.Tensor{
		"weight channels": {x, randTensor(r, c+1, 1, k)},
		"past width":      {x, w, nil, randTensor(r, b, c, k)},
		"empty kernel":    {x, tensor.From([]int{c, 1, 0}, []float32{})},
		"rank 2":          {randTensor(r, c, l), w},
		"bias shape":      {x, w, randTensor(r, c+1)},
		"mixed types":     {x, to64(w)},
	} {
		if _, err := op(in); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if _, _, err := opstest.Compile(opstest.Node{Op: "CausalConvWithState", Opset: 27, Attrs: []*onnxpb.Attribute{attrStr("activation", "relu")}}, 2); err == nil {
		t.Error("activation relu accepted")
	}
}
