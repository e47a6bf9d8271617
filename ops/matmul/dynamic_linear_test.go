package matmul

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// specQuantize is DynamicQuantizeLinear's quantization of one value as
// the ONNX specification writes it: saturate(roundEven(x/scale) + zp),
// the division in float32, the rounding in float64.
func specQuantize(x, scale, zp float32) uint8 {
	return uint8(min(max(math.RoundToEven(float64(x/scale))+float64(zp), 0), 255))
}

// TestDynamicQuantFast: the float32 rounding of the fast path, in Go and
// on each table's vector kernels, gives the specification's bytes, on random data, on exact ties (x/scale = n + ½)
// and their neighbours one ulp away, at both ends of the range.
func TestDynamicQuantFast(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	check := func(name string, x []float32) {
		t.Helper()
		for _, tb := range dispatch.Available() {
			c := ops.NewContext(t.Context(), gemm.New(tb, 1), false)
			q, err := newDynamicQuant(c, x)
			if err != nil {
				t.Fatal(err)
			}
			if !q.fast {
				t.Fatalf("%s: finite data took the slow path", name)
			}
			var lo, hi float32
			for _, v := range x {
				lo, hi = min(lo, v), max(hi, v)
			}
			if s := (hi - lo) / 255; q.scale != s {
				t.Fatalf("%s/%s: scale %v, want %v", name, tb.Name, q.scale, s)
			}
			for _, vector := range []bool{false, true} {
				y := make([]uint8, len(x)+1)
				y[len(x)] = 0xAA
				if vector {
					q.quantizeWith(tb, x, y[:len(x)])
				} else {
					q.quantize(x, y[:len(x)])
				}
				for i, v := range x {
					if want := specQuantize(v, q.scale, q.zp); y[i] != want {
						t.Fatalf("%s/%s (vector %v): x[%d] = %v (x/scale %v) -> %d, want %d", name, tb.Name, vector, i, v, v/q.scale, y[i], want)
					}
				}
				if y[len(x)] != 0xAA {
					t.Fatalf("%s: wrote past the end", name)
				}
			}
		}
	}
	for _, scale := range []float64{1e-30, 1e-3, 1, 7.3, 1e30} {
		x := make([]float32, 4099)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		check("normal", x)
		for i := range x {
			x[i] = float32(math.Abs(r.NormFloat64() * scale))
		}
		check("positive", x)
	}
	// ties: with lo = -127.5 and hi = 127.5 the scale is 1 and x/scale = x
	var ties []float32
	for n := -128; n < 128; n++ {
		v := float32(n) + 0.5
		ties = append(ties, v, math.Nextafter32(v, 1000), math.Nextafter32(v, -1000))
	}
	check("ties", append(ties, -127.5, 127.5))
}

// TestDynamicLinearBuild: the builder refuses what it cannot run with a
// clear error.
func TestDynamicLinearBuild(t *testing.T) {
	w := tensor.From([]int{4, 3}, make([]int8, 12))
	s := tensor.Scalar(float32(1))
	tanh := &onnxpb.Attribute{Name: "activations", Type: onnxpb.AttrStrings, Strings: [][]byte{[]byte("Tanh")}}
	two := &onnxpb.Attribute{Name: "activations", Type: onnxpb.AttrStrings, Strings: [][]byte{nil, nil}}
	for _, c := range []struct {
		name   string
		inputs int
		out    int
		consts []*tensor.Tensor
		attrs  []*onnxpb.Attribute
	}{
		{"too few inputs", 3, 1, []*tensor.Tensor{nil, w, nil}, nil},
		{"outputs", 6, 2, []*tensor.Tensor{nil, w, nil, s, nil}, nil},
		{"weight not constant", 6, 1, []*tensor.Tensor{nil, nil, nil, s, nil}, nil},
		{"float weight", 6, 1, []*tensor.Tensor{nil, tensor.From([]int{4, 3}, make([]float32, 12)), nil, s, nil}, nil},
		{"scale not constant", 6, 1, []*tensor.Tensor{nil, w, nil, nil, nil}, nil},
		{"scale of 2", 6, 1, []*tensor.Tensor{nil, w, nil, tensor.From([]int{2}, []float32{1, 2}), nil}, nil},
		{"bias of 2", 6, 1, []*tensor.Tensor{nil, w, nil, s, tensor.From([]int{2}, []float32{1, 2})}, nil},
		{"K differs", 11, 2, []*tensor.Tensor{nil, w, nil, s, nil, nil, tensor.From([]int{5, 3}, make([]int8, 15)), nil, s, nil}, nil},
		{"tanh", 6, 1, []*tensor.Tensor{nil, w, nil, s, nil}, []*onnxpb.Attribute{tanh}},
		{"activations", 6, 1, []*tensor.Tensor{nil, w, nil, s, nil}, []*onnxpb.Attribute{two}},
	} {
		if _, _, err := compile(t, spec{domain: ops.RewriteDomain, op: "DynamicLinear", opset: 1, inputs: c.inputs, outputs: c.out, consts: c.consts, attrs: c.attrs, absent: []int{2}}); err == nil {
			t.Errorf("%s: built", c.name)
		}
	}
	op, _ := mustCompile(t, spec{domain: ops.RewriteDomain, op: "DynamicLinear", opset: 1, inputs: 6, consts: []*tensor.Tensor{nil, w, nil, s, nil}, absent: []int{2, 4, 5}})
	for _, x := range []*tensor.Tensor{tensor.From([]int{2, 5}, make([]float32, 10)), tensor.Scalar(float32(1)), tensor.From([]int{2, 4}, make([]int32, 8))} {
		if _, err := run(op, nil, x, nil, nil, nil, nil, nil); err == nil {
			t.Errorf("x %v %v ran", x.DType, x.Shape)
		}
	}
	// a residual of another type is the graph's Add's error
	op, _ = mustCompile(t, spec{domain: ops.RewriteDomain, op: "DynamicLinear", opset: 1, inputs: 6, consts: []*tensor.Tensor{nil, w, nil, s, nil}, absent: []int{2, 4},
		attrs: []*onnxpb.Attribute{{Name: "opset", Type: onnxpb.AttrInt, I: 13}}})
	if _, err := run(op, nil, tensor.From([]int{2, 4}, make([]float32, 8)), nil, nil, nil, nil, tensor.From([]int{2, 3}, make([]int32, 6))); err == nil {
		t.Error("an INT32 residual added to FP32")
	}
}

// BenchmarkDynamicQuantize: DynamicQuantizeLinear's quantization of a
// transformer's widest activation (128 × 1024), the range found with the
// table's MinMax, the values divided and rounded with its QuantizeDivU8.
func BenchmarkDynamicQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 128*1024)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]uint8, len(x))
	c := ops.NewContext(b.Context(), gemm.New(dispatch.Default(), 1), false)
	b.SetBytes(int64(4 * len(x)))
	b.ReportAllocs()
	for b.Loop() {
		q, err := newDynamicQuant(c, x)
		if err != nil {
			b.Fatal(err)
		}
		q.quantizeWith(q.table, x, y)
	}
}
