package matmul

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

// TestQuantizeDequantizeMatchesPair: quantserve.QuantizeDequantize gives
// what QuantizeLinear followed by DequantizeLinear give, bit for bit, on
// UINT8 and INT8 zero points (and none), with values at rounding ties
// and a few ulps either side, beyond the range, ±0, infinities and NaN,
// at scales whose reciprocals are normal, subnormal or infinite.
func TestQuantizeDequantizeMatchesPair(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	x := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, 2.5, -2.5, 1e30, -1e30, 3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30}
	for i := 0; i < 5000; i++ {
		x = append(x, float32(r.NormFloat64()*3))
	}
	const s = float32(0.0123)
	for i := -300; i <= 300; i++ { // exact multiples of the scale and halves between
		x = append(x, float32(i)*s, (float32(i)+0.5)*s)
	}
	cases := []struct {
		name   string
		qz, dz *tensor.Tensor
	}{
		{"uint8", tensor.Scalar(uint8(37)), tensor.Scalar(uint8(37))},
		{"uint8 zero", tensor.Scalar(uint8(0)), tensor.Scalar(uint8(0))},
		{"int8", tensor.Scalar(int8(-5)), tensor.Scalar(int8(-5))},
		{"int8 dq zero absent", tensor.Scalar(int8(3)), nil},
		{"zero points absent", nil, nil},
	}
	base := x
	for _, s := range []float32{s, 0.001, 0.1, 3.7, 1e-39, 1e38, 0} {
		x := append([]float32(nil), base...)
		for i := 0; i < 20000; i++ { // around every representable value, near its ties
			k := float32(r.IntN(700) - 350)
			v := (k + 0.5) * s
			for j := r.IntN(4); j > 0; j-- {
				if r.IntN(2) == 0 {
					v = math.Nextafter32(v, float32(math.Inf(1)))
				} else {
					v = math.Nextafter32(v, float32(math.Inf(-1)))
				}
			}
			x = append(x, v, k*s, float32(r.Float64()*700-350)*s)
		}
		checkQDQ(t, s, x, cases)
	}
}

func checkQDQ(t *testing.T, s float32, x []float32, cases []struct {
	name   string
	qz, dz *tensor.Tensor
}) {
	in := tensor.From([]int{len(x)}, x)
	for _, c := range cases {
		scale := tensor.Scalar(s)
		q := opstest.Run1(t, opstest.Node{Op: "QuantizeLinear", Opset: 13}, in, scale, c.qz)
		if c.qz == nil {
			q = opstest.Run1(t, opstest.Node{Op: "QuantizeLinear", Opset: 13}, in, scale)
		}
		var want *tensor.Tensor
		if c.dz == nil {
			want = opstest.Run1(t, opstest.Node{Op: "DequantizeLinear", Opset: 13}, q, scale)
		} else {
			want = opstest.Run1(t, opstest.Node{Op: "DequantizeLinear", Opset: 13}, q, scale, c.dz)
		}
		op, err := buildQDQ([]*tensor.Tensor{nil, scale, c.qz, scale, c.dz})
		if err != nil {
			t.Fatal(err)
		}
		out, err := op.Run(opstest.Background(), []*tensor.Tensor{in, scale, c.qz, scale, c.dz})
		if err != nil {
			t.Fatal(err)
		}
		got := out[0]
		g, w := got.Data.([]float32), want.Data.([]float32)
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s, scale %v: x = %v: %v, the pair gives %v", c.name, s, x[i], g[i], w[i])
			}
		}
	}
}

// TestQuantizeDequantizeRefuses: scales and zero points must be constant
// scalars of the types QuantizeLinear takes.
func TestQuantizeDequantizeRefuses(t *testing.T) {
	s := tensor.Scalar(float32(0.5))
	for name, consts := range map[string][]*tensor.Tensor{
		"run-time scale":    {nil, nil, tensor.Scalar(uint8(0)), s, tensor.Scalar(uint8(0))},
		"per-channel scale": {nil, tensor.From([]int{2}, []float32{1, 2}), nil, s, nil},
		"mixed zero points": {nil, s, tensor.Scalar(uint8(0)), s, tensor.Scalar(int8(0))},
		"int16 zero point":  {nil, s, tensor.Scalar(int16(0)), s, tensor.Scalar(int16(0))},
		"float64 dq scale":  {nil, s, nil, tensor.Scalar(0.5), nil},
	} {
		if _, err := buildQDQ(consts); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// buildQDQ compiles a QuantizeDequantize whose inputs 1..4 are consts, a
// nil entry an absent input (the run-time scale case names input 1
// without a value).
func buildQDQ(consts []*tensor.Tensor) (ops.Operator, error) {
	d, err := ops.Lookup(ops.RewriteDomain, "QuantizeDequantize", 1)
	if err != nil {
		return nil, err
	}
	n := &ops.Node{Name: "qdq", Type: "QuantizeDequantize", Domain: ops.RewriteDomain, Opset: 1,
		Attrs: map[string]*onnxpb.Attribute{}, Outputs: []string{"y"}, Consts: consts}
	for i, c := range consts {
		name := fmt.Sprintf("in%d", i)
		if c == nil && i != 0 && !(i == 1 && consts[2] != nil) {
			name = ""
		}
		n.Inputs = append(n.Inputs, name)
	}
	params, err := d.Parse(n)
	if err != nil {
		return nil, err
	}
	return d.Build(n, params)
}
