package matmul

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// dequantize folds a DequantizeLinear of constants as the graph compiler
// does: its output, and the integer weights behind it (nil when the int8
// kernels do not take them).
func dequantize(t *testing.T, axis int64, in ...*tensor.Tensor) (*tensor.Tensor, *ops.QDQWeight) {
	t.Helper()
	op, _ := mustCompile(t, spec{op: "DequantizeLinear", opset: 13, inputs: len(in), consts: in, attrs: []*onnxpb.Attribute{attrInt("axis", axis)}})
	return run1(t, op, nil, in...), op.(ops.QDQSource).QDQWeight()
}

// TestQDQWeights: a DequantizeLinear of constants keeps the integer
// weights behind its output when they are 2-D INT8 or UINT8 with scales
// per tensor or per row or column, less their zero points.
func TestQDQWeights(t *testing.T) {
	q := tensor.From([]int{2, 3}, []uint8{0, 10, 255, 7, 128, 3})
	_, w := dequantize(t, 1, q, tensor.From([]int{3}, []float32{1, 2, 3}), tensor.From([]int{3}, []uint8{0, 128, 255}))
	if w == nil || w.PerTensor || w.Axis != 1 || w.Rows != 2 || w.Cols != 3 || !slices.Equal(w.Q, []int32{0, -118, 0, 7, 0, -252}) {
		t.Errorf("per column: %+v", w)
	}
	_, w = dequantize(t, 0, q, tensor.From([]int{2}, []float32{1, 2}), tensor.From([]int{2}, []uint8{10, 3}))
	if w == nil || w.Axis != 0 || !slices.Equal(w.Q, []int32{-10, 0, 245, 4, 125, 0}) {
		t.Errorf("per row: %+v", w)
	}
	_, w = dequantize(t, 1, q, tensor.Scalar(float32(0.5)))
	if w == nil || !w.PerTensor || !slices.Equal(w.Q, []int32{0, 10, 255, 7, 128, 3}) {
		t.Errorf("per tensor: %+v", w)
	}
	for _, c := range []struct {
		name string
		in   []*tensor.Tensor
	}{
		{"3-D", []*tensor.Tensor{tensor.From([]int{1, 2, 3}, make([]int8, 6)), tensor.Scalar(float32(1))}},
		{"INT16", []*tensor.Tensor{tensor.From([]int{2, 3}, make([]int16, 6)), tensor.Scalar(float32(1))}},
		{"a negative scale", []*tensor.Tensor{q, tensor.From([]int{3}, []float32{1, -2, 3})}},
		{"a NaN scale", []*tensor.Tensor{q, tensor.From([]int{3}, []float32{1, float32(math.NaN()), 3})}},
	} {
		if _, w := dequantize(t, 1, c.in...); w != nil {
			t.Errorf("%s: %+v", c.name, w)
		}
	}
	// a zero point known only at run time: nothing to keep
	op, _ := mustCompile(t, spec{op: "DequantizeLinear", opset: 13, inputs: 3, consts: []*tensor.Tensor{q, tensor.Scalar(float32(1))}})
	if w := op.(ops.QDQSource).QDQWeight(); w != nil {
		t.Errorf("run-time zero point: %+v", w)
	}
}

// qdqProduct is a QDQ weight W (K×N = 64×48) as ONNX Runtime's tools
// store it: INT8 with per-column scales, for MatMul; for Gemm with
// transB, stored [N, K] with its scales along axis 0.
func qdqProduct(t *testing.T, r *rand.Rand, gemmT bool) (spec, []int8, []float32) {
	const k, n = 64, 48
	q := make([]int8, k*n)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
	}
	scales := make([]float32, n)
	for i := range scales {
		scales[i] = float32(0.001 + r.Float64()*0.01)
	}
	stored, axis, rows, cols := q, int64(1), k, n
	if gemmT {
		stored, axis, rows, cols = make([]int8, k*n), 0, n, k
		for i := 0; i < k; i++ {
			for j := 0; j < n; j++ {
				stored[j*k+i] = q[i*n+j]
			}
		}
	}
	w, qw := dequantize(t, axis, tensor.From([]int{rows, cols}, stored), tensor.From([]int{n}, scales), tensor.From([]int{n}, make([]int8, n)))
	if qw == nil {
		t.Fatal("no QDQ weights")
	}
	s := spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, qdq: []*ops.QDQWeight{nil, qw}, quantize: true, scheme: quant.PerChannel}
	if gemmT {
		s.op, s.attrs = "Gemm", []*onnxpb.Attribute{attrInt("transB", 1)}
	}
	return s, q, scales
}

// TestQDQProducts: MatMul and Gemm(transB) by a QDQ weight run on the
// int8 kernels with the model's own int8 weights (the layer says so, and
// the result is the dequantized product's, activations quantized per row
// to [0, 127]: half a step per term at most); loaded without quantizing,
// the same node runs in float32.
func TestQDQProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const m, k, n = 3, 64, 48
	for _, gemmT := range []bool{false, true} {
		s, q, scales := qdqProduct(t, r, gemmT)
		op, host := mustCompile(t, s)
		if want := s.op + " 64×48 int8 per_channel (QDQ weights)"; len(host.layers) != 1 || host.layers[0] != want || !slices.Equal(host.held, []int{1}) {
			t.Fatalf("%s: layers %q, held %v", s.op, host.layers, host.held)
		}
		x := make([]float32, m*k)
		for i := range x {
			x[i] = float32(r.Float64())
		}
		y := run1(t, op, nil, tensor.From([]int{m, k}, x), nil).Data.([]float32)
		wd := make([]float32, k*n)
		for i := range wd {
			wd[i] = float32(q[i]) * scales[i%n]
		}
		want, mag := refProduct(x, wd, m, k, n)
		within(t, s.op, y, want, mag, 1.0/127)

		s.quantize = false
		_, host = mustCompile(t, s)
		if len(host.layers) != 1 || host.layers[0] != s.op+" 64×48 float32" {
			t.Errorf("%s without quantizing: layers %q", s.op, host.layers)
		}
	}
}

// TestQDQScalesAlongK: QDQ weights whose scales run along K are no
// per-channel layout: the float weight is quantized as any other.
func TestQDQScalesAlongK(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	const k, n = 64, 80
	q := make([]int8, k*n)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
	}
	w, qw := dequantize(t, 0, tensor.From([]int{k, n}, q), randScales(r, k))
	if qw == nil {
		t.Fatal("no QDQ weights")
	}
	_, host := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, qdq: []*ops.QDQWeight{nil, qw}, quantize: true, scheme: quant.PerChannel})
	if len(host.layers) != 1 || host.layers[0] != "MatMul 64×80 int8 per_channel" {
		t.Errorf("layers %q", host.layers)
	}
}

// TestWideQDQWeights: QDQ weights stored as UINT8 with per-column zero
// points (values less zero points reach ±255) stay on the int8 kernels,
// give the same bits on every table, and match the dequantized product.
func TestWideQDQWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	const m, k, n = 5, 64, 40
	q := make([]uint8, k*n)
	for i := range q {
		q[i] = uint8(r.IntN(256))
	}
	zp := make([]uint8, n)
	scales := make([]float32, n)
	for j := range zp {
		zp[j] = []uint8{0, 128, 255, uint8(r.IntN(256))}[j%4]
		scales[j] = float32(0.001 + r.Float64()*0.01)
	}
	w, qw := dequantize(t, 1, tensor.From([]int{k, n}, q), tensor.From([]int{n}, scales), tensor.From([]int{n}, zp))
	x := randFloats(r, m, k)
	wd := make([]float32, k*n)
	for i := range wd {
		wd[i] = float32(int(q[i])-int(zp[i%n])) * scales[i%n]
	}
	ref, mag := refProduct(x.Data.([]float32), wd, m, k, n)
	var want []float32
	for _, tb := range dispatch.Available() {
		e := gemm.New(tb, 1)
		t.Cleanup(e.Close)
		op, host := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, qdq: []*ops.QDQWeight{nil, qw},
			engine: e, quantize: true, scheme: quant.PerChannel})
		if len(host.layers) != 1 || host.layers[0] != "MatMul 64×40 int8 per_channel (QDQ weights)" {
			t.Fatalf("%v: layers %q", tb, host.layers)
		}
		y := run1(t, op, e, x, nil).Data.([]float32)
		if want == nil {
			want = y
			within(t, "wide QDQ weights", y, ref, mag, 1.0/60)
			continue
		}
		for i := range want {
			if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: y[%d] = %v, %v gives %v", tb, i, y[i], dispatch.Available()[0], want[i])
			}
		}
	}
}
