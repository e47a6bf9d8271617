package reduce

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// kindNames names each reduction's operator.
var kindNames = map[reduceKind]string{
	reduceSum: "ReduceSum", reduceMean: "ReduceMean", reduceMax: "ReduceMax", reduceMin: "ReduceMin",
	reduceProd: "ReduceProd", reduceL1: "ReduceL1", reduceL2: "ReduceL2", reduceLogSum: "ReduceLogSum",
	reduceLogSumExp: "ReduceLogSumExp", reduceSumSquare: "ReduceSumSquare",
}

var reduceKinds = []reduceKind{reduceSum, reduceMean, reduceMax, reduceMin, reduceProd, reduceL1, reduceL2, reduceLogSum, reduceLogSumExp, reduceSumSquare}

func kindName(k reduceKind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprint(k)
}

// TestDescriptors pins each operator's opset ranges and that it folds:
// the reductions take their axes as an attribute, then as an input.
func TestDescriptors(t *testing.T) {
	for op, axesInput := range map[string]int64{
		"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18, "ReduceProd": 18,
		"ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18, "ReduceSumSquare": 18,
		"ArgMax": 0, "ArgMin": 0,
	} {
		ds := ops.Descriptors("", op)
		want := [][2]int64{{1, axesInput - 1}, {axesInput, 0}}
		if axesInput == 0 {
			want = [][2]int64{{1, 0}}
		}
		if len(ds) != len(want) {
			t.Errorf("%s: descriptors %v", op, ds)
			continue
		}
		for i, d := range ds {
			if d.Since != want[i][0] || d.Until != want[i][1] || !d.Fold || d.Refused || d.Domain != "" {
				t.Errorf("%s: descriptor %v, want opsets %d–%d that fold", op, d, want[i][0], want[i][1])
			}
		}
	}
}

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
						y, err := reduceTensor(opstest.Background(), "op", kind, x, red, keep)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if !slices.Equal(y.Shape, wantShape) {
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
					y, err := reduceTensor(opstest.Background(), "op", kind, tensor.From(shape, xi), red, keep)
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
		y, err := reduceTensor(opstest.Background(), "op", kind, x, []bool{false, true, false}, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y.Shape, []int{2, 1, 3}) {
			t.Fatalf("%s: shape %v", kindName(kind), y.Shape)
		}
		for _, g := range y.Float64s() {
			if !closeRel(g, w, 0) {
				t.Fatalf("%s of nothing = %v, want %v", kindName(kind), g, w)
			}
		}
		y, err = reduceTensor(opstest.Background(), "op", kind, x, []bool{false, false, true}, false)
		if err != nil || !slices.Equal(y.Shape, []int{2, 0}) || y.Len() != 0 {
			t.Fatalf("%s over a kept empty axis: %v %v", kindName(kind), y, err)
		}
	}
	lo, hi := intLimits[int8]()
	yi, _ := reduceTensor(opstest.Background(), "op", reduceMax, tensor.From([]int{0}, []int8{}), []bool{true}, false)
	ya, _ := reduceTensor(opstest.Background(), "op", reduceMin, tensor.From([]int{0}, []int8{}), []bool{true}, false)
	if yi.Data.([]int8)[0] != lo || ya.Data.([]int8)[0] != hi || lo != -128 || hi != 127 {
		t.Fatalf("INT8 max/min of nothing: %v %v", yi.Data, ya.Data)
	}
	if lo, hi := intLimits[uint16](); lo != 0 || hi != 65535 {
		t.Fatalf("uint16 limits %d %d", lo, hi)
	}
	yb, _ := reduceTensor(opstest.Background(), "op", reduceMin, tensor.From([]int{0}, []bool{}), []bool{true}, false)
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
			y, err := reduceTensor(opstest.Background(), "op", c.kind, tensor.From([]int{len(c.x)}, c.x), red, false)
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
	y, err := reduceTensor(opstest.Background(), "op", reduceSum, x, []bool{false, true}, false)
	if err != nil || y.DType != tensor.Float16 {
		t.Fatal(y, err)
	}
	if got := tensor.HalfToFloat32(y.Data.([]tensor.F16)); got[0] != 6 || got[1] != 15 {
		t.Fatalf("FP16 sums %v", got)
	}
	b := tensor.From([]int{2, 2}, []bool{true, false, false, false})
	ymax, _ := reduceTensor(opstest.Background(), "op", reduceMax, b, []bool{false, true}, true)
	ymin, _ := reduceTensor(opstest.Background(), "op", reduceMin, b, []bool{true, false}, true)
	if g := ymax.Data.([]bool); !g[0] || g[1] {
		t.Fatalf("BOOL max %v", g)
	}
	if g := ymin.Data.([]bool); g[0] || g[1] {
		t.Fatalf("BOOL min %v", g)
	}
	if _, err := reduceTensor(opstest.Background(), "ReduceSum", reduceSum, b, []bool{true, true}, true); !errors.Is(err, ops.ErrInput) {
		t.Fatalf("ReduceSum of BOOL: %v", err)
	}
}

// TestReduceOpsetForms runs the attribute form (opset 11), the input form
// (opset 18) with constant and run-time axes, noop_with_empty_axes, and
// the errors bad axes give.
func TestReduceOpsetForms(t *testing.T) {
	x := tensor.From([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	compile := func(n opstest.Node, inputs int) ops.Operator {
		t.Helper()
		op, _, err := opstest.Compile(n, inputs)
		if err != nil {
			t.Fatalf("%s-%d: %v", n.Op, n.Opset, err)
		}
		return op
	}
	run := func(op ops.Operator, in ...*tensor.Tensor) (*tensor.Tensor, error) {
		out, err := op.Run(opstest.Background(), in)
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	m := compile(opstest.Node{Op: "ReduceMean", Opset: 11, Attrs: []*onnxpb.Attribute{opstest.AttrInts("axes", -1), opstest.AttrInt("keepdims", 0)}}, 1)
	y, err := run(m, x)
	if err != nil || !slices.Equal(y.Shape, []int{2}) || y.Data.([]float32)[1] != 5 {
		t.Fatalf("opset 11 ReduceMean: %v %v", y, err)
	}
	if _, _, err := opstest.Compile(opstest.Node{Op: "ReduceMean", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrInts("axes", 1)}}, 1); !errors.Is(err, onnx.ErrUnsupported) {
		t.Fatalf("an axes attribute at opset 18 must be refused, got %v", err)
	}
	m = compile(opstest.Node{Op: "ReduceSumSquare", Opset: 18, Attrs: []*onnxpb.Attribute{opstest.AttrInt("noop_with_empty_axes", 1)}}, 2)
	y, err = run(m, x, tensor.From([]int{0}, []int64{}))
	if err != nil || !slices.Equal(y.Shape, x.Shape) || y.Data.([]float32)[5] != 36 {
		t.Fatalf("noop ReduceSumSquare squares: %v %v", y, err)
	}
	y, err = run(m, x, tensor.From([]int{1}, []int64{0}))
	if err != nil || y.Data.([]float32)[0] != 17 {
		t.Fatalf("ReduceSumSquare axis 0: %v %v", y, err)
	}
	for _, bad := range []*tensor.Tensor{
		tensor.From([]int{1}, []int64{2}),
		tensor.From([]int{2}, []int64{1, -1}),
		tensor.From([]int{1, 1}, []int64{0}),
		tensor.From([]int{1}, []int32{0}),
	} {
		if _, err := run(m, x, bad); !errors.Is(err, ops.ErrInput) {
			t.Errorf("axes %v: %v, want an input error", bad.Data, err)
		}
	}
	axes := tensor.From([]int{1}, []int64{1})
	m = compile(opstest.Node{Op: "ReduceSum", Opset: 13, Consts: []*tensor.Tensor{nil, axes}}, 2)
	y, err = run(m, x, axes)
	if err != nil || y.Data.([]float32)[1] != 15 {
		t.Fatalf("ReduceSum constant axes: %v %v", y, err)
	}
	if _, err := run(m, tensor.Scalar(float32(3)), axes); !errors.Is(err, ops.ErrInput) {
		t.Fatalf("axis 1 of a scalar: %v", err)
	}
	m = compile(opstest.Node{Op: "ReduceMax", Opset: 20}, 1)
	y, err = run(m, tensor.From([]int{2}, []bool{false, true}))
	if err != nil || !y.Data.([]bool)[0] {
		t.Fatalf("BOOL ReduceMax: %v %v", y, err)
	}
	if _, _, err := opstest.Compile(opstest.Node{Op: "ReduceMax", Opset: 11}, 2); err == nil {
		t.Fatal("an axes input at opset 11 compiled")
	}
}

// TestReduceKeepsAttrs checks that a builder leaves the parsed attributes
// as they were and that the operator holds its own copy.
func TestReduceKeepsAttrs(t *testing.T) {
	op, params, err := opstest.Compile(opstest.Node{Op: "ReduceL1", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInts("axes", 0), opstest.AttrInt("keepdims", 0)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	at := params.(*ReduceAttrs)
	if !slices.Equal(at.Axes, []int64{0}) || at.KeepDims {
		t.Fatalf("parsed %+v", at)
	}
	at.KeepDims = true // a later change to the parsed struct reaches no operator
	out, err := op.Run(opstest.Background(), []*tensor.Tensor{tensor.From([]int{2, 2}, []float32{1, -2, 3, 4})})
	if err != nil || !slices.Equal(out[0].Shape, []int{2}) || out[0].Data.([]float32)[1] != 6 {
		t.Fatalf("ReduceL1 axis 0: %v %v", out, err)
	}
	var _ Reduction = at
	var _ Reduction = &ReduceInputAttrs{}
}

// TestReduceLongRuns checks that runs longer than a chunk (the stretch
// walk visits before counting its work) sum to the same bits as in one
// pass: each run's total carried from chunk to chunk, then added to its
// output.
func TestReduceLongRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	n := 2*chunk + 700
	x := make([]float32, 2*3*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		kind reduceKind
		row  func(float64, []float32) float64
	}{{reduceSum, rowSum[float32]}, {reduceL1, rowSumAbs[float32]}, {reduceSumSquare, addSquares[float32]}} {
		y, err := reduceTensor(opstest.Background(), "op", c.kind, tensor.From([]int{2, 3, n}, x), []bool{true, false, true}, false)
		if err != nil {
			t.Fatal(err)
		}
		for k, got := range y.Data.([]float32) {
			var acc float64
			for a := range 2 {
				run := x[(a*3+k)*n : (a*3+k+1)*n]
				acc += c.row(0, run)
			}
			if got != float32(acc) {
				t.Errorf("%s [%d] = %v, want %v", kindName(c.kind), k, got, float32(acc))
			}
		}
	}
}

// TestReduceCancelled checks that a reduction over a large input stops
// with the request's error once the request is cancelled.
func TestReduceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	x := tensor.From([]int{4, 1 << 16}, make([]float32, 4<<16))
	for _, kind := range reduceKinds {
		for _, red := range [][]bool{{false, true}, {true, false}} {
			if _, err := reduceTensor(c, "op", kind, x, red, true); !errors.Is(err, context.Canceled) {
				t.Errorf("%s%v cancelled: %v", kindName(kind), red, err)
			}
		}
	}
	xi := tensor.From([]int{4, 1 << 16}, make([]int16, 4<<16))
	if _, err := reduceTensor(c, "op", reduceSum, xi, []bool{true, true}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("INT16 ReduceSum cancelled: %v", err)
	}
	// a small input finishes before the first look
	if _, err := reduceTensor(c, "op", reduceSum, tensor.From([]int{3}, []float32{1, 2, 3}), []bool{true}, false); err != nil {
		t.Errorf("small ReduceSum: %v", err)
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
	c := opstest.Background()
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reduceTensor(c, "ReduceMean", reduceMean, xt, red, true); err != nil {
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
