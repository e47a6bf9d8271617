package conv

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestInt8WeightsKeepNoFloatCopy: a convolution whose constant weight
// runs on the int8 tiles (Conv, ConvTranspose, and a FusedConv folding a
// BatchNormalization into its weight) holds the weight packed as int8
// only and, in a build without autodiff, tells the compiler it holds the
// weight and keeps no float32 copy of it. The answer is the reference
// convolution's within the int8 tolerance.
func TestInt8WeightsKeepNoFloatCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 22))
	const c, m = 32, 64
	xs, ws := []int{1, c, 6, 7}, []int{m, c, 3, 3}
	x := tensor.From(xs, randomFloats(r, xs))
	w := tensor.From(ws, randomFloats(r, ws))
	xt := tensor.From([]int{1, m, 6, 7}, randomFloats(r, []int{1, m, 6, 7})) // ConvTranspose's: w is [C_in, M, ...]
	bn := make([]*tensor.Tensor, 4)
	for i := range bn {
		v := randomFloats(r, []int{m})
		if i == 0 || i == 3 { // scale and var: away from zero
			for j := range v {
				v[j] = v[j]*v[j] + 0.5
			}
		}
		bn[i] = tensor.From([]int{m}, v)
	}
	pads := opstest.AttrInts("pads", 1, 1, 1, 1)
	fusedIn := make([]*tensor.Tensor, FusedInputs)
	fusedIn[FusedX], fusedIn[FusedW] = x, w
	copy(fusedIn[FusedBNScale:], bn)
	fusedConsts := slices.Clone(fusedIn)
	fusedConsts[FusedX] = nil
	absent := absentInputs(fusedIn)
	for _, tc := range []struct {
		name string
		s    spec
		in   []*tensor.Tensor
	}{
		{"Conv", spec{op: "Conv", attrs: []*onnxpb.Attribute{pads}, inputs: 2, consts: []*tensor.Tensor{nil, w}}, []*tensor.Tensor{x, w}},
		{"ConvTranspose", spec{op: "ConvTranspose", attrs: []*onnxpb.Attribute{pads}, inputs: 2, consts: []*tensor.Tensor{nil, w}}, []*tensor.Tensor{xt, w}},
		{"FusedConv", spec{domain: "quantserve", op: FusedConvType, opset: 1, attrs: []*onnxpb.Attribute{pads}, inputs: FusedInputs, consts: fusedConsts, absent: absent}, fusedIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs [2]*tensor.Tensor
			for i, quantize := range []bool{false, true} {
				s := tc.s
				s.quantize, s.scheme = quantize, quant.PerChannel
				cc := mustCompile(t, s)
				// Builds with autodiff keep the weight in the trace, for weight
				// gradients (a FusedConv never runs in one).
				wantHeld := !dispatch.AutodiffBuilt || tc.s.op == FusedConvType
				if slices.Contains(cc.host.held, 1) != wantHeld {
					t.Fatalf("quantize %v: held inputs %v, want the weight's held %v", quantize, cc.host.held, wantHeld)
				}
				var h *held
				switch op := cc.op.(type) {
				case *Convolution:
					h = op.held
				case *Transposed:
					h = op.held
				case *fusedConv:
					h = op.held
					if op.w != nil {
						t.Errorf("quantize %v: the fused convolution keeps its folded float32 weight beside the kernels'", quantize)
					}
				default:
					t.Fatalf("compiled to %T", cc.op)
				}
				if h == nil || h.w == nil {
					t.Fatalf("quantize %v: the kernels hold no weight", quantize)
				}
				if quantize && (len(h.w.q) == 0 || len(h.w.f) != 0) {
					t.Errorf("int8: %d int8 and %d float32 packed groups, want int8 only", len(h.w.q), len(h.w.f))
				}
				if (h.kernel != nil) != dispatch.AutodiffBuilt {
					t.Errorf("quantize %v: float32 weight kept %v in a build with autodiff %v", quantize, h.kernel != nil, dispatch.AutodiffBuilt)
				}
				y, err := cc.run1(tc.in...)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = y
			}
			// int8 against float32: within the int8 weights' error (5% of the range).
			f, q := outs[0].Data.([]float32), outs[1].Data.([]float32)
			var span, worst float64
			for j := range f {
				span = max(span, absf(f[j]))
				worst = max(worst, absf(f[j]-q[j]))
			}
			if len(f) == 0 || worst > 0.05*span {
				t.Errorf("int8 differs from float32 by %.3g (output range %.3g)", worst, span)
			}
		})
	}
}
