package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// naiveReduce is the definition: every input element, visited in order,
// folded into the output element its kept indices name, in float64.
func naiveReduce(kind reduceKind, x []float64, shape []int, red []bool, keep bool) ([]float64, []int) {
	var out []int
	outStr := make([]int, len(shape))
	for i, d := range shape {
		if !red[i] {
			out = append(out, d)
		} else if keep {
			out = append(out, 1)
		}
	}
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if !red[i] {
			outStr[i] = s
			s *= shape[i]
		}
	}
	n := 1
	for _, d := range out {
		n *= d
	}
	acc := make([]float64, n)
	cnt := make([]float64, n)
	init := map[reduceKind]float64{reduceMax: math.Inf(-1), reduceMin: math.Inf(1), reduceProd: 1, reduceLogSumExp: math.Inf(-1)}[kind]
	for i := range acc {
		acc[i] = init
	}
	it := tensor.NewIter(shape, outStr)
	for i := 0; it.Next(); i++ {
		o, v := it.Off(0), x[i]
		cnt[o]++
		switch kind {
		case reduceSum, reduceMean, reduceLogSum:
			acc[o] += v
		case reduceL1:
			acc[o] += math.Abs(v)
		case reduceL2, reduceSumSquare:
			acc[o] += v * v
		case reduceMax:
			acc[o] = math.Max(acc[o], v)
		case reduceMin:
			acc[o] = math.Min(acc[o], v)
		case reduceProd:
			acc[o] *= v
		case reduceLogSumExp:
			acc[o] = math.Log(math.Exp(acc[o]) + math.Exp(v))
		}
	}
	for i := range acc {
		switch kind {
		case reduceMean:
			acc[i] /= cnt[i]
		case reduceL2:
			acc[i] = math.Sqrt(acc[i])
		case reduceLogSum:
			acc[i] = math.Log(acc[i])
		}
	}
	return acc, out
}

var reduceKinds = []reduceKind{reduceSum, reduceMean, reduceMax, reduceMin, reduceProd, reduceL1, reduceL2, reduceLogSum, reduceLogSumExp, reduceSumSquare}

func kindName(k reduceKind) string {
	for _, op := range reductions {
		if op.kind == k {
			return op.name
		}
	}
	return fmt.Sprint(k)
}

// TestReduceMatchesDefinition runs every reduction on random shapes and
// axis sets (so every coalesced layout: reduced last runs, kept last
// runs, alternating groups, size-1 axes) in FP32, FP64 and INT32 against
// naiveReduce.
func TestReduceMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int{{7}, {3, 5}, {4, 1, 6}, {2, 3, 4, 5}, {1, 130}, {3, 600}, {2, 1, 3, 1, 2}, {}}
	for _, shape := range shapes {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x32 := make([]float32, n)
		x64 := make([]float64, n)
		xi := make([]int32, n)
		for i := range x32 {
			x32[i] = float32(r.NormFloat64()) + 0.5
			x64[i] = float64(x32[i])
			xi[i] = int32(r.IntN(7) - 3)
		}
		for mask := 0; mask < 1<<len(shape); mask++ {
			red := make([]bool, len(shape))
			for i := range red {
				red[i] = mask&(1<<i) != 0
			}
			for _, keep := range []bool{true, false} {
				for _, kind := range reduceKinds {
					name := fmt.Sprintf("%s%v%v/keep=%v", kindName(kind), shape, red, keep)
					want, wantShape := naiveReduce(kind, x64, shape, red, keep)
					for _, x := range []*tensor.Tensor{tensor.From(shape, x32), tensor.From(shape, x64)} {
						y, err := reduceTensor("op", kind, x, red, keep)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if !equalShape(y.Shape, wantShape) {
							t.Fatalf("%s: shape %v, want %v", name, y.Shape, wantShape)
						}
						for i, g := range y.Float64s() {
							if !closeRel(g, want[i], 2e-6) {
								t.Fatalf("%s %v [%d] = %v, want %v", name, x.DType, i, g, want[i])
							}
						}
					}
					if kind == reduceLogSum || kind == reduceL2 || kind == reduceLogSumExp || kind == reduceProd {
						continue // logs of negative sums; products of small ints are covered by FP
					}
					xf := make([]float64, n)
					for i, v := range xi {
						xf[i] = float64(v)
					}
					want, _ = naiveReduce(kind, xf, shape, red, keep)
					y, err := reduceTensor("op", kind, tensor.From(shape, xi), red, keep)
					if err != nil {
						t.Fatal(err)
					}
					for i, g := range y.Data.([]int32) {
						if w := int32(want[i]); g != w && !(kind == reduceMean && math.IsNaN(want[i])) {
							t.Fatalf("%s INT32 [%d] = %v, want %v", name, i, g, w)
						}
					}
				}
			}
		}
	}
}

func closeRel(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(got) && math.IsNaN(want) || got == want
	}
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

// TestReduceEmptySet checks the identities over an empty set, and that
// an empty kept axis gives an empty output.
func TestReduceEmptySet(t *testing.T) {
	x := tensor.From([]int{2, 0, 3}, []float32{})
	want := map[reduceKind]float64{
		reduceSum: 0, reduceMean: math.NaN(), reduceMax: math.Inf(-1), reduceMin: math.Inf(1), reduceProd: 1,
		reduceL1: 0, reduceL2: 0, reduceLogSum: math.Inf(-1), reduceLogSumExp: math.Inf(-1), reduceSumSquare: 0,
	}
	for kind, w := range want {
		y, err := reduceTensor("op", kind, x, []bool{false, true, false}, true)
		if err != nil {
			t.Fatal(err)
		}
		if !equalShape(y.Shape, []int{2, 1, 3}) {
			t.Fatalf("%s: shape %v", kindName(kind), y.Shape)
		}
		for _, g := range y.Float64s() {
			if !closeRel(g, w, 0) {
				t.Fatalf("%s of nothing = %v, want %v", kindName(kind), g, w)
			}
		}
		y, err = reduceTensor("op", kind, x, []bool{false, false, true}, false)
		if err != nil || !equalShape(y.Shape, []int{2, 0}) || y.Len() != 0 {
			t.Fatalf("%s over a kept empty axis: %v %v", kindName(kind), y, err)
		}
	}
	lo, hi := intLimits[int8]()
	yi, _ := reduceTensor("op", reduceMax, tensor.From([]int{0}, []int8{}), []bool{true}, false)
	ya, _ := reduceTensor("op", reduceMin, tensor.From([]int{0}, []int8{}), []bool{true}, false)
	if yi.Data.([]int8)[0] != lo || ya.Data.([]int8)[0] != hi || lo != -128 || hi != 127 {
		t.Fatalf("INT8 max/min of nothing: %v %v", yi.Data, ya.Data)
	}
	if lo, hi := intLimits[uint16](); lo != 0 || hi != 65535 {
		t.Fatalf("uint16 limits %d %d", lo, hi)
	}
	yb, _ := reduceTensor("op", reduceMin, tensor.From([]int{0}, []bool{}), []bool{true}, false)
	if !yb.Data.([]bool)[0] {
		t.Fatal("ReduceMin of no BOOLs must be true")
	}
}

func TestReduceNaNAndInfinities(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		kind reduceKind
		x    []float32
		want float64
	}{
		{reduceMax, []float32{1, nan, 3}, math.NaN()},
		{reduceMin, []float32{1, 2, nan}, math.NaN()},
		{reduceLogSumExp, []float32{1, inf, 3}, math.Inf(1)},
		{reduceLogSumExp, []float32{-inf, -inf}, math.Inf(-1)},
		{reduceLogSumExp, []float32{1000, 1000}, 1000 + math.Ln2},
	} {
		for _, red := range [][]bool{{true}} {
			y, err := reduceTensor("op", c.kind, tensor.From([]int{len(c.x)}, c.x), red, false)
			if err != nil {
				t.Fatal(err)
			}
			if g := y.Float64s()[0]; !closeRel(g, c.want, 1e-6) {
				t.Errorf("%s%v = %v, want %v", kindName(c.kind), c.x, g, c.want)
			}
		}
	}
}

func TestReduceHalfAndBool(t *testing.T) {
	x := tensor.From([]int{2, 3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3, 4, 5, 6}))
	y, err := reduceTensor("op", reduceSum, x, []bool{false, true}, false)
	if err != nil || y.DType != tensor.Float16 {
		t.Fatal(y, err)
	}
	if got := tensor.HalfToFloat32(y.Data.([]tensor.F16)); got[0] != 6 || got[1] != 15 {
		t.Fatalf("FP16 sums %v", got)
	}
	b := tensor.From([]int{2, 2}, []bool{true, false, false, false})
	ymax, _ := reduceTensor("op", reduceMax, b, []bool{false, true}, true)
	ymin, _ := reduceTensor("op", reduceMin, b, []bool{true, false}, true)
	if g := ymax.Data.([]bool); !g[0] || g[1] {
		t.Fatalf("BOOL max %v", g)
	}
	if g := ymin.Data.([]bool); g[0] || g[1] {
		t.Fatalf("BOOL min %v", g)
	}
	if _, err := reduceTensor("ReduceSum", reduceSum, b, []bool{true, true}, true); !errors.Is(err, ErrInput) {
		t.Fatalf("ReduceSum of BOOL: %v", err)
	}
}

// reductionModel is a one-node model over an input x of dtype (and an
// optional axes initializer or input).
func reductionModel(t *testing.T, op string, opset int64, dt onnxpb.DataType, axes *onnxpb.Tensor, axesInput bool, attrs ...*onnxpb.Attribute) (*Model, error) {
	t.Helper()
	vi := func(name string, et onnxpb.DataType) *onnxpb.ValueInfo {
		return &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: et}}
	}
	g := &onnxpb.Graph{Inputs: []*onnxpb.ValueInfo{vi("x", dt)}, Outputs: []*onnxpb.ValueInfo{vi("y", dt)}}
	inputs := []string{"x"}
	switch {
	case axes != nil:
		g.Initializers = []*onnxpb.Tensor{axes}
		inputs = append(inputs, axes.Name)
	case axesInput:
		g.Inputs = append(g.Inputs, vi("axes", onnxpb.Int64))
		inputs = append(inputs, "axes")
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "r", Inputs: inputs, Outputs: []string{"y"}, Attributes: attrs}}
	return Load(onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g}))
}

func intsAttr(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func intAttr(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

// TestReduceOpsetForms runs the attribute form (opset 11), the input form
// (opset 18) with constant and run-time axes, noop_with_empty_axes, and
// the errors bad axes give.
func TestReduceOpsetForms(t *testing.T) {
	x := tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	run := func(m *Model, in map[string]*tensor.Tensor) (*tensor.Tensor, error) {
		out, err := m.Run(context.Background(), in, nil)
		return out["y"], err
	}
	m, err := reductionModel(t, "ReduceMean", 11, onnxpb.Float, nil, false, intsAttr("axes", -1), intAttr("keepdims", 0))
	if err != nil {
		t.Fatal(err)
	}
	y, err := run(m, map[string]*tensor.Tensor{"x": x})
	if err != nil || !equalShape(y.Shape, []int{2}) || y.Data.([]float32)[1] != 5 {
		t.Fatalf("opset 11 ReduceMean: %v %v", y, err)
	}
	if _, err := reductionModel(t, "ReduceMean", 18, onnxpb.Float, nil, false, intsAttr("axes", 1)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("an axes attribute at opset 18 must be refused, got %v", err)
	}
	m, err = reductionModel(t, "ReduceSumSquare", 18, onnxpb.Float, nil, true, intAttr("noop_with_empty_axes", 1))
	if err != nil {
		t.Fatal(err)
	}
	y, err = run(m, map[string]*tensor.Tensor{"x": x, "axes": tensor.From([]int{0}, []int64{})})
	if err != nil || !equalShape(y.Shape, x.Shape) || y.Data.([]float32)[5] != 36 {
		t.Fatalf("noop ReduceSumSquare squares: %v %v", y, err)
	}
	y, err = run(m, map[string]*tensor.Tensor{"x": x, "axes": tensor.From([]int{1}, []int64{0})})
	if err != nil || y.Data.([]float32)[0] != 17 {
		t.Fatalf("ReduceSumSquare axis 0: %v %v", y, err)
	}
	for _, bad := range []*tensor.Tensor{
		tensor.From([]int{1}, []int64{2}),
		tensor.From([]int{2}, []int64{1, -1}),
		tensor.From([]int{1, 1}, []int64{0}),
	} {
		if _, err := run(m, map[string]*tensor.Tensor{"x": x, "axes": bad}); !errors.Is(err, ErrInput) {
			t.Errorf("axes %v: %v, want an input error", bad.Data, err)
		}
	}
	m, err = reductionModel(t, "ReduceSum", 13, onnxpb.Float, model64("ax", []int64{1}), false)
	if err != nil {
		t.Fatal(err)
	}
	y, err = run(m, map[string]*tensor.Tensor{"x": x})
	if err != nil || y.Data.([]float32)[1] != 15 {
		t.Fatalf("ReduceSum constant axes: %v %v", y, err)
	}
	if _, err := run(m, map[string]*tensor.Tensor{"x": tensor.Scalar(float32(3))}); !errors.Is(err, ErrInput) {
		t.Fatalf("axis 1 of a scalar: %v", err)
	}
	m, err = reductionModel(t, "ReduceMax", 20, onnxpb.Bool, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	y, err = run(m, map[string]*tensor.Tensor{"x": tensor.From([]int{2}, []bool{false, true})})
	if err != nil || !y.Data.([]bool)[0] {
		t.Fatalf("BOOL ReduceMax: %v %v", y, err)
	}
}

func model64(name string, v []int64) *onnxpb.Tensor {
	return TensorToONNX(name, tensor.From([]int{len(v)}, v))
}

// TestExp32 compares exp32 with math.Exp across float32's range.
func TestExp32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	check := func(x float32) {
		got := exp32(x)
		want := math.Exp(float64(x))
		if want > math.MaxFloat32 {
			if !math.IsInf(float64(got), 1) {
				t.Fatalf("exp32(%v) = %v, want +Inf", x, got)
			}
			return
		}
		w32 := float32(want)
		if w32 == 0 {
			if got != 0 && float64(got) > 2*want+1e-45 {
				t.Fatalf("exp32(%v) = %v, want %v", x, got, want)
			}
			return
		}
		ulp := float64(math.Nextafter32(w32, float32(math.Inf(1))) - w32)
		if e := math.Abs(float64(got)-want) / ulp; e > worst {
			worst = e
		}
	}
	for i := 0; i < 200000; i++ {
		check(float32(r.Float64()*200 - 100))
		check(float32(r.Float64()*2 - 1))
	}
	for _, x := range []float32{0, -0, 1, -1, 88.7, 88.72283, 88.73, -87.3, -103.9, -104, -150, 1e-8} {
		check(x)
	}
	t.Logf("exp32: %.2f ulp at worst", worst)
	if worst > 2 {
		t.Fatalf("exp32 is %.2f ulp from math.Exp at worst", worst)
	}
	if !math.IsNaN(float64(exp32(float32(math.NaN())))) || exp32(float32(math.Inf(-1))) != 0 {
		t.Fatal("exp32 of NaN or -Inf")
	}
}

// BenchmarkReduceMeanLastAxis reduces a 128×768 activation over its last
// axis, as a transformer's mean pooling and normalizations do: the
// blocked float32 rows against a plain loop accumulating each element in
// float64.
func BenchmarkReduceMeanLastAxis(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 128*768)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xt := tensor.From([]int{128, 768}, x)
	red := []bool{false, true}
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reduceTensor("ReduceMean", reduceMean, xt, red, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("float64-loop", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			out := make([]float32, 128)
			for i := range out {
				var s float64
				for _, v := range x[i*768 : (i+1)*768] {
					s += float64(v)
				}
				out[i] = float32(s / 768)
			}
		}
	})
}
