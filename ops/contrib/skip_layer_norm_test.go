package contrib

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// skipNormDef computes the skip normalizations by their definition: per
// row of hidden values, s = (input + skip) + bias in float32, then in
// float64 the layer (or, simplified, RMS) normalization. skip repeats
// every len(skip) values; gamma, beta and bias may be nil (gamma: 1).
func skipNormDef(in, skip, gamma, beta, bias []float32, hidden int, eps float64, simplified bool) (y, mean, inv []float64, sum []float32) {
	for r := 0; r*hidden < len(in); r++ {
		row := make([]float32, hidden)
		for j := range row {
			row[j] = in[r*hidden+j] + skip[(r*hidden+j)%len(skip)]
			if bias != nil {
				row[j] += bias[j]
			}
		}
		sum = append(sum, row...)
		var m, v float64
		for _, x := range row {
			m += float64(x) / float64(hidden)
		}
		if simplified {
			m = 0
		}
		for _, x := range row {
			v += (float64(x) - m) * (float64(x) - m) / float64(hidden)
		}
		iv := 1 / math.Sqrt(v+eps)
		for j, x := range row {
			z := (float64(x) - m) * iv * float64(gamma[j])
			if beta != nil {
				z += float64(beta[j])
			}
			y = append(y, z)
		}
		mean, inv = append(mean, m), append(inv, iv)
	}
	return y, mean, inv, sum
}

func f64s(v []float32) []float64 { return mapF64(v, func(x float64) float64 { return x }) }

// TestSkipLayerNormMatchesDefinition checks every output, for each skip
// shape a 3-D input takes, with beta and bias present and absent.
func TestSkipLayerNormMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const b, s, h = 3, 4, 19
	x := randn(r, 2, b, s, h)
	gamma, beta, bias := randn(r, 0.5, h), randn(r, 0.5, h), randn(r, 0.5, h)
	for _, skip := range []*tensor.Tensor{randn(r, 1, b, s, h), randn(r, 1, 1, s, h), randn(r, 1, s, h)} {
		for _, c := range []struct{ beta, bias *tensor.Tensor }{{beta, bias}, {nil, bias}, {beta, nil}, {nil, nil}} {
			in := []*tensor.Tensor{x, skip, gamma, c.beta, c.bias}
			outs, err := opstest.Run(t, node("SkipLayerNormalization", 4, floatAttr("epsilon", 1e-5)), in...)
			if err != nil {
				t.Fatal(err)
			}
			var bv, sv []float32
			if c.beta != nil {
				bv = c.beta.Data.([]float32)
			}
			if c.bias != nil {
				sv = c.bias.Data.([]float32)
			}
			y, mean, inv, sum := skipNormDef(x.Data.([]float32), skip.Data.([]float32), gamma.Data.([]float32), bv, sv, h, float64(float32(1e-5)), false)
			stat := []int{b, s, 1}
			for i, want := range [][]float64{y, mean, inv, f64s(sum)} {
				if i == 1 || i == 2 {
					if !slices.Equal(outs[i].Shape, stat) || outs[i].DType != tensor.Float32 {
						t.Errorf("output %d is %v%v, want FLOAT%v", i, outs[i].DType, outs[i].Shape, stat)
					}
				}
				if err := near(outs[i], want, 1e-5, 1e-6); err != nil {
					t.Errorf("skip %v, beta %v, bias %v: output %d%v", skip.Shape, c.beta != nil, c.bias != nil, i, err)
				}
			}
		}
	}
}

// TestSkipLayerNormFloat16: FLOAT16 in, FLOAT16 out (the statistics
// FLOAT), computed from the float32 sum.
func TestSkipLayerNormFloat16(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x, skip, gamma := half(randn(r, 1, 2, 3, 8)), half(randn(r, 1, 2, 3, 8)), half(randn(r, 0.2, 8))
	outs, err := opstest.Run(t, node("SkipLayerNormalization", 4), x, skip, gamma)
	if err != nil {
		t.Fatal(err)
	}
	for i, dt := range []tensor.DataType{tensor.Float16, tensor.Float32, tensor.Float32, tensor.Float16} {
		if outs[i].DType != dt {
			t.Errorf("output %d is %v, want %v", i, outs[i].DType, dt)
		}
	}
	f := func(t *tensor.Tensor) []float32 { return tensor.HalfToFloat32(t.Data.([]tensor.F16)) }
	y, _, inv, _ := skipNormDef(f(x), f(skip), f(gamma), nil, nil, 8, float64(float32(1e-12)), false)
	if err := near(outs[0], y, 1.0/1024, 1e-3); err != nil {
		t.Errorf("output%v", err)
	}
	if err := near(outs[2], inv, 1e-6, 0); err != nil {
		t.Errorf("inv_std_var%v", err)
	}
}

// TestSkipLayerNormUnreadOutputs: outputs the graph does not read are not
// computed.
func TestSkipLayerNormUnreadOutputs(t *testing.T) {
	d, err := ops.Lookup(domain, "SkipLayerNormalization", 1)
	if err != nil {
		t.Fatal(err)
	}
	n := &ops.Node{Type: "SkipLayerNormalization", Domain: domain, Opset: 1, Attrs: map[string]*onnxpb.Attribute{},
		Inputs: []string{"x", "skip", "gamma"}, Outputs: []string{"y", "", "", "sum"}}
	at, err := d.Parse(n)
	if err != nil {
		t.Fatal(err)
	}
	op, err := d.Build(n, at)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	outs, err := op.Run(background(), []*tensor.Tensor{randn(r, 1, 2, 5), randn(r, 1, 2, 5), randn(r, 1, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0] == nil || outs[1] != nil || outs[2] != nil || outs[3] == nil {
		t.Errorf("outputs %v, want the first and the last", outs)
	}
}

// TestSkipLayerNormBadInputs: shapes other than the definition's are
// input errors, a negative epsilon a load error.
func TestSkipLayerNormBadInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x3, g := randn(r, 1, 2, 3, 4), randn(r, 1, 4)
	for name, in := range map[string][]*tensor.Tensor{
		"rank 1":                 {randn(r, 1, 4), randn(r, 1, 4), g},
		"rank 4":                 {randn(r, 1, 1, 2, 3, 4), randn(r, 1, 1, 2, 3, 4), g},
		"hidden 0":               {randn(r, 1, 2, 0), randn(r, 1, 2, 0), randn(r, 1, 0)},
		"skip of another batch":  {x3, randn(r, 1, 3, 3, 4), g},
		"skip of another length": {x3, randn(r, 1, 2, 4), g},
		"skip [1,T,H] of 2-D":    {randn(r, 1, 3, 4), randn(r, 1, 1, 3, 4), g},
		"gamma":                  {x3, x3, randn(r, 1, 5)},
		"gamma of rank 2":        {x3, x3, randn(r, 1, 1, 4)},
		"beta":                   {x3, x3, g, randn(r, 1, 3)},
		"bias":                   {x3, x3, g, nil, randn(r, 1, 3)},
	} {
		if _, err := run(t, "SkipLayerNormalization", nil, in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if _, _, err := opstest.Compile(node("SkipLayerNormalization", 1, floatAttr("epsilon", -1)), 3); err == nil {
		t.Error("a negative epsilon compiled")
	}
}
