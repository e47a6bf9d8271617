package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/kernels"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvProductFinish: a channels-last convolution, int8 or
// float32, whose stage is a bias, a residual and a clamp has its product
// finish each row tile as it writes it (gemm.Engine.QMatMulRowsFinish,
// MatMulStridedFinish): the same bits as the same product without bias,
// residual or activation, finished afterwards by kernels.ConvFinish, on
// every table, for 1x1 and 3x3 kernels, one group and several, with and
// without the residual.
func TestFusedConvProductFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	const n = 2
	for _, c := range []struct {
		c, m, k, group int
		res            bool
		act            string
	}{
		{128, 96, 1, 1, true, "Relu"},
		{64, 48, 3, 1, true, "Relu"},
		{64, 80, 3, 1, false, "Relu"},
		{128, 64, 1, 1, true, ""},
		{64, 64, 3, 2, true, "Relu"},
	} {
		xs, ws := []int{n, c.c, 11, 12}, []int{c.m, c.c / c.group, c.k, c.k}
		ys := []int{n, c.m, 11, 12}
		x := toNHWC(tensor.From(xs, randomFloats(r, xs)))
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		res := toNHWC(tensor.From(ys, randomFloats(r, ys)))
		p := int64(c.k / 2)
		attrs := []*onnxpb.Attribute{opstest.AttrInts("pads", p, p, p, p), opstest.AttrInt("group", int64(c.group)),
			opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1)}
		plain := slices.Clone(attrs)
		if c.act != "" {
			attrs = append(attrs, opstest.AttrString("activation", c.act))
		}
		absent := []int{FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedXScale}
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedW], in[FusedB] = x, w, b
		if c.res {
			attrs = append(attrs, opstest.AttrInt("nhwc_residual", 1))
			in[FusedResidual] = res
		} else {
			absent = append(absent, FusedResidual)
		}
		lo := float32(math.Inf(-1))
		if c.act == "Relu" {
			lo = 0
		}
		for _, e := range engines() {
			for _, q := range []bool{true, false} {
				name := fmt.Sprintf("%dx%d %d->%d group %d residual %v %s %s int8=%v", c.k, c.k, c.c, c.m, c.group, c.res, c.act, engineName(e), q)
				cp := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: attrs, inputs: FusedInputs,
					consts: []*tensor.Tensor{FusedW: w, FusedB: b}, absent: absent, engine: e, quantize: q, scheme: quant.PerChannel})
				if strings.Contains(cp.layers()[0], " int8") != q {
					t.Fatalf("%s: layer %q", name, cp.layers()[0])
				}
				got, err := cp.run1(in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// The same product, no bias, finished here.
				bare := mustCompile(t, spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: plain, inputs: FusedInputs,
					consts: []*tensor.Tensor{FusedW: w}, absent: []int{FusedB, FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar, FusedResidual, FusedXScale},
					engine: e, quantize: q, scheme: quant.PerChannel})
				y, err := bare.run1(x, w)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want := slices.Clone(y.Data.([]float32))
				bv, rv := b.Data.([]float32), res.Data.([]float32)
				for at := 0; at < len(want); at += c.m {
					var rr []float32
					if c.res {
						rr = rv[at : at+c.m]
					}
					kernels.ConvFinish(want[at:at+c.m], bv, rr, lo, float32(math.Inf(1)))
				}
				for i, v := range got.Data.([]float32) {
					if math.Float32bits(v) != math.Float32bits(want[i]) {
						t.Fatalf("%s: y[%d] = %v, finished afterwards %v", name, i, v, want[i])
					}
				}
			}
		}
	}
}
