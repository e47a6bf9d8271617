package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvBound runs FusedConv with a folded Max or Min against the
// same node without it followed by the Max or Min operator itself, and
// demands the same bits: every activation (LeakyRelu with alpha 0 writes
// -0 for negative values, Relu +0), bounds of both signs of zero, a NaN
// bound and ordinary ones, a NaN in the image, channels-first and
// channels-last, depthwise, a residual that broadcasts (the bound then
// applies after the late Add), on every table.
func TestFusedConvBound(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	acts := []struct {
		name string
		p    []float32
	}{
		{"", nil}, {"Relu", nil}, {"LeakyRelu", []float32{0.1}}, {"LeakyRelu", []float32{0}}, {"Clip", []float32{-0.5, 0.75}}, {"HardSwish", nil},
	}
	bounds := []struct {
		op string
		c  float32
	}{
		{"Max", -0.4}, {"Max", 0}, {"Max", negZero}, {"Max", 0.2}, {"Min", 0.3}, {"Min", negZero}, {"Min", 0}, {"Min", -0.1}, {"Max", nan},
	}
	var sawNegZero, sawNaN bool
	for _, c := range []struct {
		name        string
		c, m, group int
		nhwc, nan   bool
		res         string
	}{
		{name: "nchw", c: 8, m: 16, group: 1, nan: true},
		{name: "channels-last", c: 8, m: 24, group: 1, nhwc: true},
		{name: "depthwise", c: 16, m: 16, group: 16},
		{name: "broadcast residual", c: 8, m: 16, group: 1, res: "broadcast"},
	} {
		xs, ws := []int{2, c.c, 7, 9}, []int{c.m, c.c / c.group, 3, 3}
		xv := randomFloats(r, xs)
		if c.nan {
			xv[40] = nan
		}
		x := tensor.From(xs, xv)
		w := tensor.From(ws, randomFloats(r, ws))
		b := tensor.From([]int{c.m}, randomFloats(r, []int{c.m}))
		var res *tensor.Tensor
		if c.res == "broadcast" {
			res = tensor.From([]int{1, c.m, 1, 1}, randomFloats(r, []int{1, c.m, 1, 1}))
		}
		in := make([]*tensor.Tensor, FusedInputs)
		in[FusedX], in[FusedW], in[FusedB], in[FusedResidual] = x, w, b, res
		if c.nhwc {
			in[FusedX] = toNHWC(x)
		}
		absent := absentInputs(in)
		consts := []*tensor.Tensor{FusedW: w, FusedB: b}
		for _, act := range acts {
			base := []*onnxpb.Attribute{opstest.AttrInts("pads", 1, 1, 1, 1), opstest.AttrInt("group", int64(c.group))}
			if act.name != "" {
				base = append(base, opstest.AttrString("activation", act.name))
			}
			if act.p != nil {
				base = append(base, opstest.AttrFloats("activation_params", act.p...))
			}
			if c.nhwc {
				base = append(base, opstest.AttrInt("nhwc_in", 1), opstest.AttrInt("nhwc_out", 1))
			}
			for _, e := range engines() {
				sp := spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: base, inputs: FusedInputs, consts: consts, absent: absent, engine: e}
				y0, err := mustCompile(t, sp).run1(in...)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range y0.Data.([]float32) {
					sawNegZero = sawNegZero || math.Float32bits(v) == 1<<31
					sawNaN = sawNaN || v != v
				}
				for _, bd := range bounds {
					name := fmt.Sprintf("%s %s %v %s(%v) %s", c.name, act.name, act.p, bd.op, bd.c, engineName(e))
					want, err := opstest.Run(t, opstest.Node{Op: bd.op, Opset: 13}, y0, tensor.From([]int{1}, []float32{bd.c}))
					if err != nil {
						t.Fatal(err)
					}
					sp := sp
					sp.attrs = append(append([]*onnxpb.Attribute(nil), base...), opstest.AttrString("bound", bd.op), opstest.AttrFloat("bound_value", bd.c))
					got, err := mustCompile(t, sp).run1(in...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					gv, wv := got.Data.([]float32), want[0].Data.([]float32)
					if len(gv) != len(wv) {
						t.Fatalf("%s: %d values, want %d", name, len(gv), len(wv))
					}
					for i := range wv {
						if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) {
							t.Fatalf("%s: y[%d] = %v (%#x), the unfused graph gives %v (%#x)", name, i, gv[i], math.Float32bits(gv[i]), wv[i], math.Float32bits(wv[i]))
						}
					}
				}
			}
		}
	}
	if !sawNegZero || !sawNaN {
		t.Fatalf("the cases wrote no -0 (%v) or no NaN (%v) for the bounds to meet", sawNegZero, sawNaN)
	}
}

// TestFusedConvBoundRefused: a bound other than Max or Min is refused at
// load.
func TestFusedConvBoundRefused(t *testing.T) {
	w := tensor.From([]int{2, 1, 1, 1}, []float32{1, 2})
	_, err := compile(spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, inputs: 2, consts: []*tensor.Tensor{nil, w},
		attrs: []*onnxpb.Attribute{opstest.AttrString("bound", "Sum"), opstest.AttrFloat("bound_value", 1)}})
	if err == nil {
		t.Fatal("FusedConv with bound Sum compiled")
	}
}
