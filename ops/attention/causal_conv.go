package attention

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "CausalConvWithState", Since: 27, Fold: true}, buildCausalConv)
}

// CausalConvAttrs are CausalConvWithState's attributes.
type CausalConvAttrs struct {
	Activation string `onnx:"activation" default:"none"`
}

// causalConv implements CausalConvWithState, the depthwise causal
// convolution in front of LinearAttention: per channel,
// out[t] = bias + Σ_i w[i]·x'[t+i] over x' = past_state (or k-1 zeros)
// followed by the input, optionally through SiLU; present_state is the
// last k-1 values of x'. Computed in float32.
type causalConv struct {
	silu bool
}

func buildCausalConv(n *ops.Node, at *CausalConvAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 4, 1, 2); err != nil {
		return nil, err
	}
	op := &causalConv{}
	switch at.Activation {
	case "none":
	case "silu", "swish":
		op.silu = true
	default:
		return nil, fmt.Errorf("activation %q is not none, silu or swish", at.Activation)
	}
	return op, nil
}

func (op *causalConv) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, w, bias, past := in[0], in[1], ops.Optional(in, 2), ops.Optional(in, 3)
	if err := ops.SameType("CausalConvWithState", x, w, bias, past); err != nil {
		return nil, err
	}
	if !x.DType.IsFloat() || x.Rank() != 3 {
		return nil, ops.InputErrorf("CausalConvWithState takes a rank-3 floating-point input, got %v%s", x.DType, tensor.ShapeString(x.Shape))
	}
	b, ch, l := x.Shape[0], x.Shape[1], x.Shape[2]
	if w.Rank() != 3 || w.Shape[0] != ch || w.Shape[1] != 1 || w.Shape[2] < 1 {
		return nil, ops.InputErrorf("CausalConvWithState: weight %s, want (%d, 1, k >= 1)", tensor.ShapeString(w.Shape), ch)
	}
	k := w.Shape[2]
	if bias != nil && !ops.EqualShape(bias.Shape, []int{ch}) {
		return nil, ops.InputErrorf("CausalConvWithState: bias %s, want (%d)", tensor.ShapeString(bias.Shape), ch)
	}
	if past != nil && !ops.EqualShape(past.Shape, []int{b, ch, k - 1}) {
		return nil, ops.InputErrorf("CausalConvWithState: past_state %s, want (%d, %d, %d)", tensor.ShapeString(past.Shape), b, ch, k-1)
	}
	xd, wd := float32s(x), float32s(w)
	var bd, pd []float32
	if bias != nil {
		bd = float32s(bias)
	}
	if past != nil {
		pd = float32s(past)
	}
	out := make([]float32, len(xd))
	present := make([]float32, b*ch*(k-1))
	xp := make([]float32, k-1+l) // one channel's padded sequence
	pace := c
	for bi := 0; bi < b; bi++ {
		for ci := 0; ci < ch; ci++ {
			if err := pace.Tick(l * k); err != nil {
				return nil, err
			}
			row := bi*ch + ci
			clear(xp[:k-1])
			if pd != nil {
				copy(xp, pd[row*(k-1):(row+1)*(k-1)])
			}
			copy(xp[k-1:], xd[row*l:(row+1)*l])
			kw := wd[ci*k : (ci+1)*k]
			var b0 float32
			if bd != nil {
				b0 = bd[ci]
			}
			o := out[row*l : (row+1)*l]
			for t := range o {
				s := b0
				for i, wv := range kw {
					s += wv * xp[t+i]
				}
				if op.silu {
					s *= float32(ops.Sigmoid(float64(s)))
				}
				o[t] = s
			}
			copy(present[row*(k-1):], xp[l:])
		}
	}
	return []*tensor.Tensor{
		{DType: x.DType, Shape: x.Shape, Data: ops.RoundFloat32s(out, x.DType)},
		{DType: x.DType, Shape: []int{b, ch, k - 1}, Data: ops.RoundFloat32s(present, x.DType)},
	}, nil
}
