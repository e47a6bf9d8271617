package matmul

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// intCase is one integer product: its operator, its inputs, and which
// of them are B and B's zero point (constants on the int8 kernels' path,
// fed at run time on the general path, widened to int32).
type intCase struct {
	name   string
	op     string
	in     []*tensor.Tensor
	b, bzp int
}

func intCases(r *rand.Rand) []intCase {
	const m, k, n = 7, 45, 37
	u8 := func(shape ...int) *tensor.Tensor {
		x := make([]uint8, ops.ProdInts(shape))
		for i := range x {
			x[i] = []uint8{0, 255, 128, 129, uint8(r.IntN(256))}[r.IntN(5)]
		}
		return tensor.From(shape, x)
	}
	s8 := func(shape ...int) *tensor.Tensor {
		x := make([]int8, ops.ProdInts(shape))
		for i := range x {
			x[i] = []int8{-128, 127, -127, int8(r.IntN(256) - 128)}[r.IntN(4)]
		}
		return tensor.From(shape, x)
	}
	f := func(v float32) *tensor.Tensor { return tensor.Scalar(v) }
	return []intCase{
		{"MatMulInteger u8 × s8 (with -128), no zero points", "MatMulInteger", []*tensor.Tensor{u8(m, k), s8(k, n)}, 1, 3},
		{"MatMulInteger u8 × u8, zero points: a per tensor, b per column", "MatMulInteger",
			[]*tensor.Tensor{u8(2, m, k), u8(k, n), tensor.Scalar(uint8(131)), u8(n)}, 1, 3},
		{"MatMulInteger s8 × s8, zero points: a per row, b per tensor", "MatMulInteger",
			[]*tensor.Tensor{s8(m, k), s8(k, n), s8(m), tensor.Scalar(int8(-3))}, 1, 3},
		{"MatMulInteger 1-D a", "MatMulInteger", []*tensor.Tensor{u8(k), s8(k, n)}, 1, 3},
		{"QLinearMatMul u8 × s8", "QLinearMatMul",
			[]*tensor.Tensor{u8(m, k), f(0.02), tensor.Scalar(uint8(120)), s8(k, n), f(0.01), tensor.Scalar(int8(5)), f(3), tensor.Scalar(uint8(128))}, 3, 5},
		{"QLinearMatMul s8 × s8, b scaled per column", "QLinearMatMul",
			[]*tensor.Tensor{s8(m, k), f(0.02), tensor.Scalar(int8(1)), s8(k, n), randScales(r, n), s8(n), f(0.5), tensor.Scalar(int8(-2))}, 3, 5},
	}
}

func randScales(r *rand.Rand, n int) *tensor.Tensor {
	s := make([]float32, n)
	for i := range s {
		s[i] = 0.001 + 0.01*r.Float32()
	}
	return tensor.From([]int{n}, s)
}

// refIntProduct is (a - za)·(b - zb) by the definition for 2-D a (m×k)
// and b (k×n), za per tensor or per row, zb per tensor or per column.
func refIntProduct(a, b, za, zb *tensor.Tensor) []int64 {
	av, _ := a.Int64s()
	bv, _ := b.Int64s()
	k, n := b.Shape[0], b.Shape[1]
	m := len(av) / k
	zero := func(z *tensor.Tensor, i int) int64 {
		if z == nil {
			return 0
		}
		v, _ := z.Int64s()
		return v[i%len(v)]
	}
	y := make([]int64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s int64
			for p := 0; p < k; p++ {
				s += (av[i*k+p] - zero(za, i)) * (bv[p*n+j] - zero(zb, j))
			}
			y[i*n+j] = s
		}
	}
	return y
}

// TestIntegerProductsOnKernels: MatMulInteger and QLinearMatMul with
// constant weights run on the int8 kernels of every table (the weights
// and their zero point held, the layer reported) and give the exact
// results of the general path, B fed at run time and widened to int32,
// which is the definition.
func TestIntegerProductsOnKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	for _, c := range intCases(r) {
		general, host := mustCompile(t, spec{op: c.op, opset: 13, inputs: len(c.in)})
		if len(host.layers) != 0 {
			t.Fatalf("%s: the general path reports layers %q", c.name, host.layers)
		}
		want := run1(t, general, nil, c.in...)
		if c.op == "MatMulInteger" && c.in[0].Rank() == 2 {
			if w, _ := want.Int64s(); !slices.Equal(w, refIntProduct(c.in[0], c.in[1], ops.Optional(c.in, 2), ops.Optional(c.in, 3))) {
				t.Fatalf("%s: the general path differs from the definition", c.name)
			}
		}
		consts := make([]*tensor.Tensor, len(c.in))
		consts[c.b] = c.in[c.b]
		if c.bzp < len(c.in) {
			consts[c.bzp] = c.in[c.bzp]
		}
		in := slices.Clone(c.in)
		in[c.b] = nil
		held := []int{c.b}
		if c.bzp < len(c.in) {
			in[c.bzp] = nil
			held = append(held, c.bzp)
		}
		for _, tb := range dispatch.Available() {
			e := gemm.New(tb, 2)
			t.Cleanup(e.Close)
			op, host := mustCompile(t, spec{op: c.op, opset: 13, inputs: len(c.in), consts: consts, engine: e})
			if len(host.layers) != 1 || !slices.Equal(host.held, held) {
				t.Fatalf("%s: layers %q, held %v", c.name, host.layers, host.held)
			}
			got := run1(t, op, e, in...)
			if !slices.Equal(want.Shape, got.Shape) || want.DType != got.DType {
				t.Fatalf("%s on %v: %v%v, want %v%v", c.name, tb, got.DType, got.Shape, want.DType, want.Shape)
			}
			wv, _ := want.Int64s()
			gv, _ := got.Int64s()
			if !slices.Equal(wv, gv) {
				t.Fatalf("%s on %v: results differ from the general path", c.name, tb)
			}
		}
	}
}

// TestDynamicQuantizedProduct: ONNX Runtime's dynamic quantization,
// DynamicQuantizeLinear then MatMulInteger by a constant INT8 weight,
// gives the general path's bits.
func TestDynamicQuantizedProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	const m, k, n = 7, 45, 37
	w := make([]int8, k*n)
	for i := range w {
		w[i] = int8(r.IntN(256) - 128)
	}
	b := tensor.From([]int{k, n}, w)
	dql, _ := mustCompile(t, spec{op: "DynamicQuantizeLinear", opset: 11, inputs: 1, outputs: 3})
	q, err := run(dql, nil, randFloats(r, m, k))
	if err != nil {
		t.Fatal(err)
	}
	general, _ := mustCompile(t, spec{op: "MatMulInteger", opset: 13, inputs: 3})
	held, host := mustCompile(t, spec{op: "MatMulInteger", opset: 13, inputs: 3, consts: []*tensor.Tensor{nil, b}})
	if len(host.layers) != 1 || host.layers[0] != "MatMulInteger 45×37 int8 INT8 weights (integer product)" {
		t.Fatalf("layers %q", host.layers)
	}
	want, _ := run1(t, general, nil, q[0], b, q[2]).Int64s()
	got, _ := run1(t, held, nil, q[0], nil, q[2]).Int64s()
	if !slices.Equal(want, got) || !slices.Equal(want, refIntProduct(q[0], b, q[2], nil)) {
		t.Fatal("results differ from the general path")
	}
}

// TestIntegerProductsGeneral: weights the int8 kernels do not take run
// the general way; inputs the products cannot take are the request's
// error.
func TestIntegerProductsGeneral(t *testing.T) {
	a := tensor.From([]int{2, 3}, []uint8{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		name   string
		consts []*tensor.Tensor
	}{
		{"a 3-D B", []*tensor.Tensor{nil, tensor.From([]int{1, 3, 2}, make([]uint8, 6))}},
		{"an INT32 B", []*tensor.Tensor{nil, tensor.From([]int{3, 2}, make([]int32, 6))}},
		{"a zero point known at run time", []*tensor.Tensor{nil, tensor.From([]int{3, 2}, make([]uint8, 6)), nil, nil}},
		{"a zero point per row of B", []*tensor.Tensor{nil, tensor.From([]int{3, 2}, make([]uint8, 6)), nil, tensor.From([]int{3}, make([]uint8, 3))}},
	} {
		op, host := mustCompile(t, spec{op: "MatMulInteger", opset: 13, inputs: len(c.consts), consts: c.consts})
		if len(host.layers) != 0 || len(host.held) != 0 || op.(*matMulInteger).p != nil {
			t.Errorf("%s: on the kernels (%q, held %v)", c.name, host.layers, host.held)
		}
	}
	op, _ := mustCompile(t, spec{op: "MatMulInteger", opset: 13, inputs: 2, consts: []*tensor.Tensor{nil, tensor.From([]int{3, 2}, make([]uint8, 6))}})
	for _, c := range []struct {
		name string
		in   []*tensor.Tensor
	}{
		{"an INT32 A", []*tensor.Tensor{tensor.From([]int{1, 3}, []int32{1, 2, 3}), nil}},
		{"inner dimensions", []*tensor.Tensor{tensor.From([]int{1, 2}, []uint8{1, 2}), nil}},
		{"a zero point of another type", []*tensor.Tensor{a, nil, tensor.Scalar(int8(1))}},
		{"a zero point per column of A", []*tensor.Tensor{a, nil, tensor.From([]int{3}, []uint8{1, 2, 3})}},
	} {
		if _, err := run(op, nil, c.in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", c.name, err)
		}
	}
	q, _ := mustCompile(t, spec{op: "QLinearMatMul", opset: 13, inputs: 8})
	s := tensor.Scalar(float32(1))
	b := tensor.From([]int{3, 2}, make([]uint8, 6))
	for _, c := range []struct {
		name string
		in   []*tensor.Tensor
	}{
		{"a scale per row of A", []*tensor.Tensor{a, tensor.From([]int{2}, []float32{1, 1}), tensor.Scalar(uint8(0)), b, s, tensor.Scalar(uint8(0)), s, tensor.Scalar(uint8(0))}},
		{"a float output zero point", []*tensor.Tensor{a, s, tensor.Scalar(uint8(0)), b, s, tensor.Scalar(uint8(0)), s, tensor.Scalar(float32(0))}},
		{"b_scale of the wrong length", []*tensor.Tensor{a, s, tensor.Scalar(uint8(0)), b, tensor.From([]int{3}, []float32{1, 1, 1}), tensor.Scalar(uint8(0)), s, tensor.Scalar(uint8(0))}},
	} {
		if _, err := run(q, nil, c.in...); !errors.Is(err, ops.ErrInput) {
			t.Errorf("QLinearMatMul, %s: %v, want an input error", c.name, err)
		}
	}
}
