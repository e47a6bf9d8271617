package matmul

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// TestLinearKernels: a MatMul by a constant 2-D float32 weight holds it
// packed (input 1 held, the layer reported) on the kernels the model's
// options choose: float32, or int8 when quantizing a weight of at least
// ops.MinQuantizedWeights values. Either way it computes x·W, on every
// table.
func TestLinearKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct {
		k, n     int
		quantize bool
		scheme   quant.Scheme
		kernels  string
		tol      float64
	}{
		{64, 80, false, 0, "float32", floatTol},
		{64, 80, true, quant.PerChannel, "int8 per_channel", int8Tol},
		{64, 80, true, quant.PerTensor, "int8 per_tensor", int8Tol},
		{16, 16, true, quant.PerChannel, "float32", floatTol}, // too small to pay
	} {
		w := randFloats(r, c.k, c.n)
		x := randFloats(r, 3, 5, c.k)
		want, mag := refProduct(x.Data.([]float32), w.Data.([]float32), 15, c.k, c.n)
		for _, tb := range dispatch.Available() {
			e := gemm.New(tb, 2)
			t.Cleanup(e.Close)
			op, host := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w},
				engine: e, quantize: c.quantize, scheme: c.scheme})
			lin := WeightOf(op)
			if lin == nil || lin.K() != c.k || lin.N() != c.n || lin.Quantized() != (c.kernels != "float32") {
				t.Fatalf("%s: weight %+v", c.kernels, lin)
			}
			if !slices.Equal(host.held, []int{1}) || len(host.layers) != 1 || host.layers[0] != fmt.Sprintf("MatMul %d×%d %s", c.k, c.n, c.kernels) {
				t.Fatalf("%s: held %v, layers %q", c.kernels, host.held, host.layers)
			}
			y := run1(t, op, e, x, nil)
			if !slices.Equal(y.Shape, []int{3, 5, c.n}) {
				t.Fatalf("%s: shape %v", c.kernels, y.Shape)
			}
			within(t, c.kernels+" on "+tb.String(), y.Data.([]float32), want, mag, c.tol)
		}
	}
}

// TestLinearInputs: what a Linear cannot multiply is the request's
// error, and empty products are zeros of the right shape.
func TestLinearInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	w := randFloats(r, 64, 64)
	for _, quantize := range []bool{false, true} {
		op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: quantize, scheme: quant.PerChannel})
		for _, x := range []*tensor.Tensor{
			tensor.From([]int{2, 63}, make([]float32, 126)),
			tensor.From([]int{2, 64}, make([]float64, 128)),
			tensor.Scalar(float32(1)),
		} {
			if _, err := run(op, nil, x, nil); !errors.Is(err, ops.ErrInput) {
				t.Errorf("quantize %v, x %v%v: %v, want an input error", quantize, x.DType, x.Shape, err)
			}
		}
		y := run1(t, op, nil, tensor.From([]int{0, 2, 64}, []float32{}), nil)
		if !slices.Equal(y.Shape, []int{0, 2, 64}) || y.Len() != 0 {
			t.Errorf("quantize %v: empty product %v", quantize, y.Shape)
		}
		v := run1(t, op, nil, randFloats(r, 64), nil) // a 1-D x is one row
		if !slices.Equal(v.Shape, []int{64}) {
			t.Errorf("quantize %v: 1-D product %v", quantize, v.Shape)
		}
	}
	// a sum over nothing
	op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, tensor.From([]int{0, 3}, []float32{})}})
	y := run1(t, op, nil, tensor.From([]int{2, 0}, []float32{}), nil)
	if !slices.Equal(y.Shape, []int{2, 3}) || !slices.Equal(y.Data.([]float32), make([]float32, 6)) {
		t.Errorf("K = 0: %v %v", y.Shape, y.Data)
	}
	// a NaN among the activations of an int8 product
	q, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: true, scheme: quant.PerChannel})
	x := randFloats(r, 1, 64)
	x.Data.([]float32)[5] = float32(math.NaN())
	if _, err := run(q, nil, x, nil); !errors.Is(err, ops.ErrInput) {
		t.Errorf("NaN on the int8 kernels: %v, want an input error", err)
	}
}

// TestNewLinear: the API other families multiply their weights with.
func TestNewLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	w := randFloats(r, 70, 60)
	host := &compilerNode{op: "FusedMatMul"}
	n := &ops.Node{Name: "f", Type: "FusedMatMul", Inputs: []string{"x", "w"}, Quantize: true, Scheme: quant.PerChannel, Host: host}
	lin, err := NewLinear(n, 1, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !lin.Quantized() || !slices.Equal(host.held, []int{1}) || len(host.layers) != 1 || host.layers[0] != "FusedMatMul 70×60 int8 per_channel" {
		t.Fatalf("quantized %v, held %v, layers %q", lin.Quantized(), host.held, host.layers)
	}
	x := randFloats(r, 4, 70)
	y, err := lin.Apply(ops.NewContext(t.Context(), nil, false), x)
	if err != nil {
		t.Fatal(err)
	}
	want, mag := refProduct(x.Data.([]float32), w.Data.([]float32), 4, 70, 60)
	within(t, "Apply", y.Data.([]float32), want, mag, int8Tol)

	w.Data.([]float32)[7] = float32(math.Inf(1))
	if _, err := NewLinear(n, 1, w, nil); !errors.Is(err, quant.ErrNotFinite) || !strings.Contains(err.Error(), `"w"`) {
		t.Errorf("an infinite weight: %v", err)
	}
	if _, err := NewLinear(n, 1, tensor.From([]int{2, 2}, []float64{1, 2, 3, 4}), nil); err == nil {
		t.Error("a float64 weight was taken")
	}
	if _, err := NewLinear(n, 1, randFloats(r, 4, 3), &ops.QDQWeight{Rows: 3, Cols: 4, Q: make([]int32, 12), Scales: []float32{1}, PerTensor: true}); err == nil {
		t.Error("integer weights of another shape were taken")
	}
}

// TestBackwardInput: dX = dY·Wᵀ through the weights the kernels hold, in
// builds that keep them (the autodiff tag); others say gradients are not
// built in.
func TestBackwardInput(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const m, k, n = 3, 72, 64
	w := randFloats(r, k, n)
	wt := make([]float32, k*n)
	for i := 0; i < k; i++ {
		for j := 0; j < n; j++ {
			wt[j*k+i] = w.Data.([]float32)[i*n+j]
		}
	}
	dy := randFloats(r, m, n).Data.([]float32)
	want, mag := refProduct(dy, wt, m, n, k)
	for _, quantize := range []bool{false, true} {
		op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, w}, quantize: quantize, scheme: quant.PerChannel})
		lin := WeightOf(op)
		dx, err := lin.BackwardInput(gemm.Default(), dy, m)
		if !dispatch.AutodiffBuilt {
			if !errors.Is(err, dispatch.ErrAutodiffUnavailable) {
				t.Errorf("quantize %v: %v, want ErrAutodiffUnavailable", quantize, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		tol := floatTol
		if quantize {
			tol = int8Tol
		}
		within(t, "dX", dx, want, mag, tol)
		if _, err := lin.BackwardInput(gemm.Default(), dy[1:], m); err == nil {
			t.Error("a short dY was taken")
		}
	}
}
