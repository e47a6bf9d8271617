package contrib

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// int8Cases are the cases of testdata whose constant weights hold at
// least ops.MinQuantizedWeights values: a model loaded with quantization
// runs their products on the int8 kernels.
var int8Cases = []string{"fused_matmul_weight_f32", "attention_wide_f32"}

// attrOf returns the attribute name of pn, or nil.
func attrOf(pn *onnxpb.Node, name string) *onnxpb.Attribute {
	for _, a := range pn.Attributes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// int8Tolerance returns, for each output value of c's node (FusedMatMul
// or Attention) run on in with its weights on the int8 kernels of engine
// e, the most the int8 rounding may move it from the float product's:
//
//   - FusedMatMul: |alpha| times the bound of each value of op(A)·op(B)
//     (int8Bound: half a step of each weight and of each activation);
//   - Attention: the int8 projections' error carried through the
//     attention (int8OutputBound: the scores' largest move d, so the
//     softmax weights within e^{±2d}, and the values' own error).
func int8Tolerance(t *testing.T, pn *onnxpb.Node, in []*tensor.Tensor, e *gemm.Engine, scheme quant.Scheme) []float64 {
	t.Helper()
	switch pn.OpType {
	case "FusedMatMul":
		alpha, transA, transB := 1.0, false, false
		if a := attrOf(pn, "alpha"); a != nil {
			alpha = float64(a.F)
		}
		transA = attrOf(pn, "transA") != nil && attrOf(pn, "transA").I != 0
		transB = attrOf(pn, "transB") != nil && attrOf(pn, "transB").I != 0
		x, _ := opDef(in[0].Float64s(), in[0].Shape, transA, false)
		w, ws := opDef(in[1].Float64s(), in[1].Shape, transB, false)
		k, n := ws[0], ws[1]
		bound := int8Bound(toFloat32s(x), toFloat32s(w), len(x)/k, k, n, scheme == quant.PerTensor)
		for i := range bound {
			bound[i] *= math.Abs(alpha)
		}
		return bound
	case "Attention":
		a := attIn{x: in[attInput], w: in[attWeights], heads: int(attrOf(pn, "num_heads").I)}
		if len(in) > attBias {
			a.bias = in[attBias]
		}
		if s := attrOf(pn, "scale"); s != nil {
			a.scale = s.F
		}
		return int8OutputBound(a, a.project(), int8Projections(t, a, e, scheme))
	}
	t.Fatalf("no int8 bound for %s", pn.OpType)
	return nil
}

// TestInt8AgreesWithONNXRuntime runs the int8 cases of testdata as a
// model loaded with quantization runs them — per channel and per tensor,
// on every kernel table this CPU runs, the weights reported on the int8
// kernels — and compares each output with ONNX Runtime's (computed in
// float32) within the int8 rounding's bound (int8Tolerance) plus ONNX's
// tolerance.
func TestInt8AgreesWithONNXRuntime(t *testing.T) {
	for _, name := range int8Cases {
		c := readCase(t, filepath.Join("testdata", name))
		pn := c.g.Nodes[0]
		vals := map[string]*tensor.Tensor{}
		consts := map[string]bool{}
		for _, p := range c.g.Initializers {
			x, err := onnx.TensorFromONNX(p)
			if err != nil {
				t.Fatal(err)
			}
			vals[p.Name], consts[p.Name] = x, true
		}
		for i, vi := range c.g.Inputs {
			vals[vi.Name] = c.ins[i]
		}
		n := opstest.Node{Domain: domain, Op: pn.OpType, Opset: c.opset, Outputs: len(pn.Outputs), Attrs: pn.Attributes,
			Consts: make([]*tensor.Tensor, len(pn.Inputs))}
		in := make([]*tensor.Tensor, len(pn.Inputs))
		big := false
		for j, nm := range pn.Inputs {
			in[j] = vals[nm]
			if consts[nm] {
				n.Consts[j] = in[j]
				big = big || in[j].Rank() == 2 && in[j].Len() >= ops.MinQuantizedWeights
			}
		}
		if !big {
			t.Fatalf("%s has no constant weight of %d values or more", name, ops.MinQuantizedWeights)
		}
		for _, scheme := range []quant.Scheme{quant.PerChannel, quant.PerTensor} {
			for _, tb := range dispatch.Available() {
				t.Run(fmt.Sprintf("%s/%v/%v", name, scheme, tb), func(t *testing.T) {
					e := gemm.New(tb, 1)
					defer e.Close()
					op, host, err := compileWith(n, len(in), loadOpts{engine: e, quantize: true, scheme: scheme})
					if err != nil {
						t.Fatal(err)
					}
					if len(host.layers) != 1 || !strings.HasSuffix(host.layers[0], "int8 "+scheme.String()) {
						t.Fatalf("layers %q, want one on the int8 kernels", host.layers)
					}
					run := slices.Clone(in)
					for _, i := range host.held {
						run[i] = nil
					}
					out, err := op.Run(ops.NewContext(context.Background(), e, false), run)
					if err != nil {
						t.Fatal(err)
					}
					bound := int8Tolerance(t, pn, in, e, scheme)
					got, want := out[0].Float64s(), c.out[0].Float64s()
					var worst, slack float64 // the largest difference; the smallest share of its bound left
					slack = 1
					for i := range want {
						d := math.Abs(got[i] - want[i])
						tol := bound[i] + onnxATol + onnxRTol*math.Abs(want[i])
						if !(d <= tol) {
							t.Fatalf("%s[%d] = %v, ONNX Runtime %v: %.3g apart, bound %.3g", c.g.Outputs[0].Name, i, got[i], want[i], d, tol)
						}
						worst, slack = max(worst, d), min(slack, 1-d/tol)
					}
					t.Logf("%s within %.3g of ONNX Runtime's, %.0f%% of the bound left at the closest", c.g.Outputs[0].Name, worst, 100*slack)
				})
			}
		}
	}
}
