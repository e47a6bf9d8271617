package matmul

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// refMatMul is numpy's matmul of a and b in float64, by the definition:
// 1-D operands promoted, leading dimensions broadcast index by index.
func refMatMul(a, b []float64, as, bs []int) ([]int, []float64) {
	pa, pb := slices.Clone(as), slices.Clone(bs)
	if len(pa) == 1 {
		pa = []int{1, pa[0]}
	}
	if len(pb) == 1 {
		pb = []int{pb[0], 1}
	}
	m, k, n := pa[len(pa)-2], pa[len(pa)-1], pb[len(pb)-1]
	ba, bb := pa[:len(pa)-2], pb[:len(pb)-2]
	rank := max(len(ba), len(bb))
	batch := make([]int, rank)
	dim := func(s []int, i int) int { // s's dimension i, counted from the right of batch
		if j := i - (rank - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for i := range batch {
		batch[i] = max(dim(ba, i), dim(bb, i))
	}
	nb := ops.ProdInts(batch)
	y := make([]float64, 0, nb*m*n)
	idx := make([]int, rank)
	for range nb {
		offA, offB := 0, 0
		for i := range rank {
			da, db := dim(ba, i), dim(bb, i)
			offA = offA*da + min(idx[i], da-1)
			offB = offB*db + min(idx[i], db-1)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float64
				for p := 0; p < k; p++ {
					s += a[offA*m*k+i*k+p] * b[offB*k*n+p*n+j]
				}
				y = append(y, s)
			}
		}
		for d := rank - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < batch[d] {
				break
			}
			idx[d] = 0
		}
	}
	shape := append(slices.Clone(batch), m, n)
	switch {
	case len(as) == 1 && len(bs) == 1:
		shape = batch
	case len(as) == 1:
		shape = append(slices.Clone(batch), n)
	case len(bs) == 1:
		shape = append(slices.Clone(batch), m)
	}
	return shape, y
}

// TestMatMulShapes: MatMul of two run-time inputs, 1-D operands and
// broadcast batches among them, against the definition, in every type it
// takes (exact for integers and float64, whose sums run in order).
func TestMatMulShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2})
	for _, c := range []struct{ a, b []int }{
		{[]int{3, 4}, []int{4, 5}},
		{[]int{4}, []int{4, 5}},
		{[]int{3, 4}, []int{4}},
		{[]int{4}, []int{4}},
		{[]int{2, 1, 3, 4}, []int{3, 4, 5}},
		{[]int{2, 3, 4}, []int{4, 2}},
		{[]int{4}, []int{2, 4, 3}},
		{[]int{0, 4}, []int{4, 3}},
		{[]int{3, 0}, []int{0, 2}},
	} {
		for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint32, tensor.Uint64, tensor.Float16, tensor.BFloat16} {
			lo := -4 // small integers: every product and sum exact in each type
			if dt == tensor.Uint32 || dt == tensor.Uint64 {
				lo = 0
			}
			av := make([]float64, ops.ProdInts(c.a))
			bv := make([]float64, ops.ProdInts(c.b))
			for i := range av {
				av[i] = float64(lo + r.IntN(5))
			}
			for i := range bv {
				bv[i] = float64(lo + r.IntN(5))
			}
			shape, want := refMatMul(av, bv, c.a, c.b)
			a, b := cast(t, tensor.From(c.a, av), dt), cast(t, tensor.From(c.b, bv), dt)
			y := run1(t, op, nil, a, b)
			if y.DType != dt || !slices.Equal(y.Shape, shape) {
				t.Fatalf("%v %v × %v: %v%v, want %v%v", dt, c.a, c.b, y.DType, y.Shape, dt, shape)
			}
			if got := cast(t, y, tensor.Float64).Data.([]float64); !slices.Equal(got, want) {
				t.Fatalf("%v %v × %v: %v, want %v", dt, c.a, c.b, got, want)
			}
		}
	}
}

// TestMatMulFloat32Values: float32 products of random values on the
// kernels, against float64 sums.
func TestMatMulFloat32Values(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	op, host := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2})
	if WeightOf(op) != nil || len(host.held) != 0 || len(host.layers) != 0 {
		t.Fatalf("a product of two inputs holds %v, reports %v", host.held, host.layers)
	}
	a, b := randFloats(r, 2, 7, 33), randFloats(r, 33, 19)
	y := run1(t, op, nil, a, b)
	av, bv := a.Data.([]float32), b.Data.([]float32)
	for i := range 2 {
		want, mag := refProduct(av[i*7*33:(i+1)*7*33], bv, 7, 33, 19)
		within(t, "MatMul", y.Data.([]float32)[i*7*19:(i+1)*7*19], want, mag, floatTol)
	}
}

// TestMatMulErrors: MatMul and Gemm are the registry's; operands MatMul
// cannot take are the request's error.
func TestMatMulErrors(t *testing.T) {
	for _, c := range []struct {
		op    ops.Op
		typ   string
		opset int64
	}{{MatMul, "MatMul", 13}, {Gemm, "Gemm", 13}} {
		if d, err := ops.Lookup("", c.typ, c.opset); err != nil || !c.op.Has(d) {
			t.Errorf("%s at opset %d: %v, not the package's", c.typ, c.opset, err)
		}
	}
	op, _ := mustCompile(t, spec{op: "MatMul", opset: 13, inputs: 2})
	f := func(shape ...int) *tensor.Tensor { return tensor.From(shape, make([]float32, ops.ProdInts(shape))) }
	for _, c := range []struct {
		name string
		a, b *tensor.Tensor
	}{
		{"inner dimensions", f(2, 3), f(4, 2)},
		{"scalar", tensor.Scalar(float32(1)), f(1, 2)},
		{"types", f(2, 3), tensor.From([]int{3, 2}, make([]float64, 6))},
		{"batches", f(2, 2, 3), f(3, 3, 2)},
		{"int8", tensor.From([]int{1, 1}, []int8{1}), tensor.From([]int{1, 1}, []int8{1})},
	} {
		if _, err := run(op, nil, c.a, c.b); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", c.name, err)
		}
	}
	if _, _, err := compile(t, spec{op: "MatMul", opset: 13, inputs: 3}); err == nil {
		t.Error("MatMul of three inputs compiled")
	}
}
