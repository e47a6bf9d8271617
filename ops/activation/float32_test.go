package activation

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// TestFloat32MatchesFloat64 compares every activation's float32 kernel
// with its float64 path (the twin every other type runs) on the same
// inputs: within a few ulps, or an absolute 1e-6 where the spec's float32
// formula itself cancels (HardSigmoid, HardSwish near their kinks).
func TestFloat32MatchesFloat64(t *testing.T) {
	xs := actInputs()
	for b := uint64(0); b < 1<<32; b += 65537 { // a sample of every exponent
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	x32 := tensor.From([]int{len(xs)}, xs)
	x64 := tensor.From([]int{len(xs)}, f64s(xs))
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.Attribute
		ulps  float64
		abs   float64
	}{
		{"Relu", 14, nil, 0, 0},
		{"LeakyRelu", 16, []*onnxpb.Attribute{fattr("alpha", 0.1)}, 0.5, 0},
		// Sigmoid's kernels flush to zero from x = -87.3 on, where the
		// result (e**x) leaves the normal floats, as ExpNeg does.
		{"Sigmoid", 13, nil, 2.5, 1.2e-38},
		{"Tanh", 13, nil, 1.5, 0},
		{"HardSigmoid", 22, []*onnxpb.Attribute{fattr("alpha", 0.3), fattr("beta", 0.4)}, 1, 1e-6},
		{"HardSwish", 22, nil, 1, 1e-6},
		// The exact form's tail, below 1.2e-38 from x = -13.1 on, is
		// flushed to zero (the SIMD kernels' e**(-x²/2) stops at normal
		// floats).
		{"Gelu", 20, nil, 5, 1.2e-38},
		// The tanh form's kernels flush to zero where e**-|t| leaves the
		// normal floats (x below -9.97, results under 1.2e-37).
		{"Gelu", 20, []*onnxpb.Attribute{{Name: "approximate", Type: onnxpb.AttrString, S: []byte("tanh")}}, 4, 1.2e-37},
		// Where e**(alpha·x) leaves the normal floats the kernel flushes
		// the product to 0: at most |x|·1.2e-38, under 1e-36 here.
		{"Swish", 24, []*onnxpb.Attribute{fattr("alpha", 1.5)}, 4, 1e-36},
		{"Clip", 6, []*onnxpb.Attribute{fattr("min", -1.5), fattr("max", 2)}, 0, 0},
	} {
		o32, err := run(t, c.op, c.opset, c.attrs, x32)
		if err != nil {
			t.Fatal(err)
		}
		o64, err := run(t, c.op, c.opset, c.attrs, x64)
		if err != nil {
			t.Fatal(err)
		}
		g, w := o32[0].Data.([]float32), o64[0].Data.([]float64)
		for i := range g {
			if e := ulps(g[i], w[i]); e > c.ulps && !(math.Abs(float64(g[i])-w[i]) <= c.abs) {
				t.Errorf("%s(%v) float32 %v, float64 %v: %.2f ulp", c.op, xs[i], g[i], w[i], e)
				break
			}
		}
	}
}
