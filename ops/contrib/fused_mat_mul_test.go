package contrib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/quant"
	"github.com/quantserve/quantserve/tensor"
)

// layerHost stands in for the graph compiler's record of a node
// (ops.Node.Host): it keeps the layers reported and the inputs held.
type layerHost struct {
	op     string
	layers []string // "op K×N kernels"
	held   []int
}

func (h *layerHost) AddLayer(k, cols int, kernels string) {
	h.layers = append(h.layers, fmt.Sprintf("%s %d×%d %s", h.op, k, cols, kernels))
}

func (h *layerHost) HoldInputs(i ...int) { h.held = append(h.held, i...) }

// loadOpts are the options of a model's load a node is compiled under.
type loadOpts struct {
	engine   *gemm.Engine // gemm.Default() when nil
	quantize bool
	scheme   quant.Scheme
}

// compileWith compiles n (inputs inputs, n.Consts known at load) as the
// graph compiler would for a model loaded with o, returning the operator
// and what it told the compiler.
func compileWith(n opstest.Node, inputs int, o loadOpts) (ops.Operator, *layerHost, error) {
	d, err := ops.Lookup(n.Domain, n.Op, n.Opset)
	if err != nil {
		return nil, nil, err
	}
	e := o.engine
	if e == nil {
		e = gemm.Default()
	}
	host := &layerHost{op: n.Op}
	on := &ops.Node{Name: n.Op, Type: n.Op, Domain: n.Domain, Opset: n.Opset, Attrs: map[string]*onnxpb.Attribute{},
		Consts: make([]*tensor.Tensor, inputs), Engine: e, Quantize: o.quantize, Scheme: o.scheme, Host: host}
	copy(on.Consts, n.Consts)
	for _, a := range n.Attrs {
		on.Attrs[a.Name] = a
	}
	for i := range inputs {
		on.Inputs = append(on.Inputs, fmt.Sprintf("in%d", i))
	}
	for i := range max(n.Outputs, 1) {
		on.Outputs = append(on.Outputs, fmt.Sprintf("out%d", i))
	}
	attrs, err := d.Parse(on)
	if err != nil {
		return nil, nil, err
	}
	op, err := d.Build(on, attrs)
	return op, host, err
}

// permuted returns x (shape s, row-major) with its dimensions permuted:
// out[i_0, …] = x[…] with out's dimension d being x's dimension perm[d].
func permuted(x []float64, s, perm []int) ([]float64, []int) {
	shape := make([]int, len(s))
	for d, p := range perm {
		shape[d] = s[p]
	}
	strides := make([]int, len(s))
	for d, st := len(s)-1, 1; d >= 0; d-- {
		strides[d], st = st, st*s[d]
	}
	y := make([]float64, len(x))
	idx := make([]int, len(shape))
	for i := range y {
		off := 0
		for d, p := range perm {
			off += idx[d] * strides[p]
		}
		y[i] = x[off]
		for d := len(shape) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return y, shape
}

// opDef returns op(x) of FusedMatMul's definition: under batch, x's first
// dimension moved before its last; under trans, the last two swapped
// (a 1-D x as it is).
func opDef(x []float64, s []int, trans, batch bool) ([]float64, []int) {
	r := len(s)
	if batch {
		perm := append(append(seqInts(1, r-1), 0), r-1)
		x, s = permuted(x, s, perm)
	}
	if trans && r >= 2 {
		x, s = permuted(x, s, append(seqInts(0, r-2), r-1, r-2))
	}
	return x, s
}

func seqInts(from, to int) []int {
	var v []int
	for i := from; i < to; i++ {
		v = append(v, i)
	}
	return v
}

// matmulDef is numpy's matmul of a (shape as) and b (shape bs) in
// float64, index by index: its shape, values and the magnitude of each
// value (Σ|a·b|).
func matmulDef(a, b []float64, as, bs []int) (shape []int, y, mag []float64) {
	pa, pb := as, bs
	if len(pa) == 1 {
		pa = []int{1, pa[0]}
	}
	if len(pb) == 1 {
		pb = []int{pb[0], 1}
	}
	m, k, n := pa[len(pa)-2], pa[len(pa)-1], pb[len(pb)-1]
	ba, bb := pa[:len(pa)-2], pb[:len(pb)-2]
	r := max(len(ba), len(bb))
	batch := make([]int, r)
	dim := func(s []int, d int) int { // s's size along batch dimension d, 1 when absent
		if j := d - (r - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	for d := range batch {
		batch[d] = max(dim(ba, d), dim(bb, d))
		if dim(ba, d) == 0 || dim(bb, d) == 0 {
			batch[d] = 0
		}
	}
	nb := ops.ProdInts(batch)
	y, mag = make([]float64, nb*m*n), make([]float64, nb*m*n)
	idx := make([]int, r)
	for bi := 0; bi < nb; bi++ {
		oa, ob := 0, 0 // the batch's matrices in a and b (broadcast)
		for d := 0; d < r; d++ {
			da, db := dim(ba, d), dim(bb, d)
			oa = oa*da + idx[d]%da
			ob = ob*db + idx[d]%db
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s, g float64
				for p := 0; p < k; p++ {
					v := a[(oa*m+i)*k+p] * b[(ob*k+p)*n+j]
					s += v
					g += math.Abs(v)
				}
				y[(bi*m+i)*n+j], mag[(bi*m+i)*n+j] = s, g
			}
		}
		for d := r - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < batch[d] {
				break
			}
			idx[d] = 0
		}
	}
	shape = append(slices.Clone(batch), m, n)
	switch {
	case len(as) == 1 && len(bs) == 1:
		shape = batch
	case len(as) == 1:
		shape = append(slices.Clone(batch), n)
	case len(bs) == 1:
		shape = append(slices.Clone(batch), m)
	}
	return shape, y, mag
}

// fmmCase is one FusedMatMul: its operands' shapes and attributes.
type fmmCase struct {
	as, bs                         []int
	alpha                          float32
	transA, transB, batchA, batchB bool
}

func (c fmmCase) attrs() []*onnxpb.Attribute {
	b := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	return []*onnxpb.Attribute{floatAttr("alpha", c.alpha), intAttr("transA", b(c.transA)), intAttr("transB", b(c.transB)),
		intAttr("transBatchA", b(c.batchA)), intAttr("transBatchB", b(c.batchB))}
}

// def computes c on a and b (FLOAT or FLOAT16) by the definition: shape,
// values and magnitudes (times |alpha|).
func (c fmmCase) def(a, b *tensor.Tensor) ([]int, []float64, []float64) {
	av, as := opDef(a.Float64s(), a.Shape, c.transA, c.batchA)
	bv, bs := opDef(b.Float64s(), b.Shape, c.transB, c.batchB)
	shape, y, mag := matmulDef(av, bv, as, bs)
	for i := range y {
		y[i] *= float64(c.alpha)
		mag[i] *= math.Abs(float64(c.alpha))
	}
	return shape, y, mag
}

var fmmCases = []fmmCase{
	{as: []int{2, 3, 4, 6}, bs: []int{3, 6, 5}, alpha: 0.5},
	{as: []int{4, 6}, bs: []int{6, 3}, alpha: 1},
	{as: []int{2, 7, 5}, bs: []int{1, 3, 7}, alpha: -1.25, transA: true, transB: true},
	{as: []int{6, 2, 3, 4}, bs: []int{6, 2, 1, 5}, alpha: 1, transA: true, batchA: true, batchB: true},
	{as: []int{3, 2, 4}, bs: []int{5, 2, 4}, alpha: 3, batchA: true, batchB: true, transB: true},
	{as: []int{4, 1, 3, 5}, bs: []int{6, 2, 1, 4}, alpha: 2, batchA: true, transA: true, batchB: true, transB: true},
	{as: []int{7}, bs: []int{2, 5, 7}, alpha: 1, transA: true, transB: true},
	{as: []int{3, 4, 7}, bs: []int{4}, alpha: 0.25, transA: true, transB: true},
	{as: []int{5}, bs: []int{5}, alpha: -2},
	{as: []int{1, 2, 1, 3}, bs: []int{3, 1, 3, 2}, alpha: 1},
	{as: []int{0, 3}, bs: []int{3, 4}, alpha: 1},
	{as: []int{2, 0}, bs: []int{0, 3}, alpha: 1},
	{as: []int{2, 3, 70}, bs: []int{70, 40}, alpha: 0.5},
}

// TestFusedMatMulMatchesDefinition multiplies FLOAT and FLOAT16 operands
// of every attribute combination (transposes, batch transposes, 1-D
// operands, broadcast batches, empty products, sums over nothing) on
// every kernel table, and compares with the definition computed index by
// index in float64.
func TestFusedMatMulMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range fmmCases {
		a, b := randn(r, 1, c.as...), randn(r, 1, c.bs...)
		for _, dt := range []tensor.DataType{tensor.Float32, tensor.Float16} {
			x, y := a, b
			rtol, atol := 1e-5, 1e-5
			if dt == tensor.Float16 {
				x, y, rtol = half(a), half(b), halfRTol
			}
			shape, want, _ := c.def(x, y)
			for _, tb := range dispatch.Available() {
				e := gemm.New(tb, 2)
				op, _, err := opstest.Compile(node("FusedMatMul", 1, c.attrs()...), 2)
				if err != nil {
					t.Fatal(err)
				}
				out, err := op.Run(ops.NewContext(context.Background(), e, false), []*tensor.Tensor{x, y})
				e.Close()
				if err != nil {
					t.Fatalf("%+v %v: %v", c, dt, err)
				}
				if out[0].DType != dt || !slices.Equal(out[0].Shape, shape) {
					t.Fatalf("%+v %v: %v%v, want %v%v", c, dt, out[0].DType, out[0].Shape, dt, shape)
				}
				if err := near(out[0], want, rtol, atol); err != nil {
					t.Fatalf("%+v %v on %v: %v", c, dt, tb, err)
				}
			}
		}
	}
}

// int8Bound returns, for each value of x·W (x m×k, W k×n, row-major), the
// most the int8 kernels may move it: each weight is rounded to half a
// step of its column's scale (max|W[:, j]|/127, or max|W|/127 per
// tensor), each activation to half a step of its row's (at most
// max|x[i, :]|/64, the scale of a row with negative values), so that
//
//	|Δy_ij| ≤ Σ_p (|x_ip|·sw_j/2 + sx_i/2·|w_pj| + sx_i·sw_j/4)
//
// (with 1% for the float32 rounding of scales and sums).
func int8Bound(x, w []float32, m, k, n int, perTensor bool) []float64 {
	sw := make([]float64, n)
	for p := 0; p < k; p++ {
		for j := 0; j < n; j++ {
			sw[j] = math.Max(sw[j], math.Abs(float64(w[p*n+j]))/127)
		}
	}
	if perTensor {
		top := slices.Max(append(sw, 0))
		for j := range sw {
			sw[j] = top
		}
	}
	bound := make([]float64, m*n)
	for i := 0; i < m; i++ {
		var sx, sumX float64
		for _, v := range x[i*k : (i+1)*k] {
			sx = math.Max(sx, math.Abs(float64(v))/64)
			sumX += math.Abs(float64(v))
		}
		for j := 0; j < n; j++ {
			var sumW float64
			for p := 0; p < k; p++ {
				sumW += math.Abs(float64(w[p*n+j]))
			}
			bound[i*n+j] = 1.01 * (sumX*sw[j]/2 + sx/2*sumW + float64(k)*sx*sw[j]/4)
		}
	}
	return bound
}

// TestFusedMatMulWeightKernels: a FusedMatMul by a constant 2-D FLOAT B
// holds op(B) (input 1 held, the product reported among the layers) on
// the kernels the model's options choose: float32, or int8 when
// quantizing a weight of at least ops.MinQuantizedWeights values. Either
// way it computes alpha·op(A)·op(B) on every table: float32 within float
// rounding of the definition, int8 within the bound of its rounding.
func TestFusedMatMulWeightKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, c := range []struct {
		k, n     int
		quantize bool
		scheme   quant.Scheme
		kernels  string
	}{
		{96, 80, false, 0, "float32"},
		{96, 80, true, quant.PerChannel, "int8 per_channel"},
		{96, 80, true, quant.PerTensor, "int8 per_tensor"},
		{64, 64, true, quant.PerChannel, "int8 per_channel"}, // exactly ops.MinQuantizedWeights
		{63, 64, true, quant.PerChannel, "float32"},          // one row short
		{6, 5, true, quant.PerChannel, "float32"},
	} {
		for _, transB := range []bool{false, true} {
			fc := fmmCase{as: []int{2, c.k, 5}, bs: []int{c.k, c.n}, alpha: 0.75, transA: true, transB: transB}
			if transB {
				fc.bs = []int{c.n, c.k}
			}
			a, b := randn(r, 1, fc.as...), randn(r, 0.1, fc.bs...)
			shape, want, mag := fc.def(a, b)
			var bound []float64
			if c.kernels != "float32" {
				opA, _ := opDef(a.Float64s(), a.Shape, true, false)
				w, _ := opDef(b.Float64s(), b.Shape, transB, false)
				bound = int8Bound(toFloat32s(opA), toFloat32s(w), 10, c.k, c.n, c.scheme == quant.PerTensor)
			}
			for _, tb := range dispatch.Available() {
				e := gemm.New(tb, 2)
				n := node("FusedMatMul", 1, fc.attrs()...)
				n.Consts = []*tensor.Tensor{nil, b}
				op, host, err := compileWith(n, 2, loadOpts{engine: e, quantize: c.quantize, scheme: c.scheme})
				if err != nil {
					t.Fatal(err)
				}
				layer := fmt.Sprintf("FusedMatMul %d×%d %s", c.k, c.n, c.kernels)
				if !slices.Equal(host.held, []int{1}) || !slices.Equal(host.layers, []string{layer}) {
					t.Fatalf("%s: held %v, layers %q, want [1] and %q", c.kernels, host.held, host.layers, layer)
				}
				out, err := op.Run(ops.NewContext(context.Background(), e, false), []*tensor.Tensor{a, nil})
				e.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out[0].Shape, shape) {
					t.Fatalf("%s: shape %v, want %v", c.kernels, out[0].Shape, shape)
				}
				for i, g := range out[0].Float64s() {
					tol := 1e-5 * (mag[i] + 1)
					if bound != nil {
						tol = 0.75*bound[i] + 1e-5*(mag[i]+1)
					}
					if d := math.Abs(g - want[i]); !(d <= tol) {
						t.Fatalf("%s transB %v on %v: [%d] = %v, want %v within %.3g", c.kernels, transB, tb, i, g, want[i], tol)
					}
				}
			}
		}
	}
}

func toFloat32s(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// TestFusedMatMulErrors: operands the product cannot take are the
// request's errors; a constant 2-D B with a batch transpose is a load
// error.
func TestFusedMatMulErrors(t *testing.T) {
	f := func(shape ...int) *tensor.Tensor { return randn(rand.New(rand.NewPCG(1, 1)), 1, shape...) }
	for _, c := range []struct {
		what  string
		attrs []*onnxpb.Attribute
		a, b  *tensor.Tensor
	}{
		{"inner dimensions", nil, f(2, 3), f(4, 5)},
		{"inner dimensions after transA", []*onnxpb.Attribute{intAttr("transA", 1)}, f(2, 3), f(3, 5)},
		{"batches", nil, f(2, 3, 4), f(3, 4, 5)},
		{"transBatchA of unequal ranks", []*onnxpb.Attribute{intAttr("transBatchA", 1)}, f(2, 3, 4), f(4, 5)},
		{"transBatchB of rank 2", []*onnxpb.Attribute{intAttr("transBatchB", 1)}, f(3, 4), f(4, 5)},
		{"a scalar", nil, tensor.Scalar(float32(1)), f(4)},
		{"types", nil, f(2, 3), half(f(3, 4))},
		{"DOUBLE", nil, tensor.From([]int{1, 1}, []float64{1}), tensor.From([]int{1, 1}, []float64{1})},
	} {
		if _, err := run(t, "FusedMatMul", c.attrs, c.a, c.b); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s: %v, want an input error", c.what, err)
		}
	}
	// A constant weight: the input must be FLOAT and fit it.
	n := node("FusedMatMul", 1)
	n.Consts = []*tensor.Tensor{nil, f(4, 5)}
	op, _, err := opstest.Compile(n, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*tensor.Tensor{half(f(2, 4)), f(2, 3), tensor.Scalar(float32(1))} {
		if _, err := op.Run(background(), []*tensor.Tensor{a, nil}); !errors.Is(err, ops.ErrInput) {
			t.Errorf("A %v%v by a constant [4, 5]: %v, want an input error", a.DType, a.Shape, err)
		}
	}
	n.Attrs = []*onnxpb.Attribute{intAttr("transBatchA", 1)}
	if _, _, err := opstest.Compile(n, 2); err == nil {
		t.Error("transBatchA with a constant 2-D B compiled")
	}
}
