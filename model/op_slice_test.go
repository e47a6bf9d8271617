package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// idxModel encodes a one-node model whose inputs x0, x1, ... have the
// types of ins (nil: an absent optional input) and unknown shapes, with
// nOut outputs y0, y1, ... of type outType (Invalid: the first input's).
func idxModel(opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int, outType tensor.DataType) []byte {
	g := &onnxpb.Graph{Name: "op"}
	var names []string
	for i, t := range ins {
		if t == nil {
			names = append(names, "")
			continue
		}
		name := fmt.Sprintf("x%d", i)
		names = append(names, name)
		g.Inputs = append(g.Inputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(t.DType)}})
	}
	if outType == tensor.Invalid {
		outType = ins[0].DType
	}
	var outs []string
	for j := 0; j < nOut; j++ {
		name := fmt.Sprintf("y%d", j)
		outs = append(outs, name)
		g.Outputs = append(g.Outputs, &onnxpb.ValueInfo{Name: name, Type: &onnxpb.Type{Kind: onnxpb.TypeTensor, ElemType: DataTypeToONNX(outType)}})
	}
	g.Nodes = []*onnxpb.Node{{OpType: op, Name: "n", Inputs: names, Outputs: outs, Attributes: attrs}}
	return onnxpb.Marshal(&onnxpb.Model{IRVersion: 8, OpsetImport: []onnxpb.OpsetID{{Version: opset}}, Graph: g})
}

// idxRunOp loads and runs a one-node model (see idxModel) and returns its
// outputs in order. Load errors fail the test.
func idxRunOp(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int) ([]*tensor.Tensor, error) {
	t.Helper()
	m, err := Load(idxModel(opset, op, attrs, ins, nOut, tensor.Invalid))
	if err != nil {
		t.Fatalf("%s: load: %v", op, err)
	}
	feed := map[string]*tensor.Tensor{}
	for i, x := range ins {
		if x != nil {
			feed[fmt.Sprintf("x%d", i)] = x
		}
	}
	res, err := m.Run(context.Background(), feed, nil)
	if err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, nOut)
	for j := range outs {
		outs[j] = res[fmt.Sprintf("y%d", j)]
	}
	return outs, nil
}

// idxRun1 is idxRunOp for a one-output operator that must succeed.
func idxRun1(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	outs, err := idxRunOp(t, opset, op, attrs, ins, 1)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return outs[0]
}

// idxWantInputError runs a one-node model and checks that it fails with an
// input error (HTTP 400) mentioning want.
func idxWantInputError(t *testing.T, opset int64, op string, attrs []*onnxpb.Attribute, ins []*tensor.Tensor, nOut int, want string) {
	t.Helper()
	_, err := idxRunOp(t, opset, op, attrs, ins, nOut)
	if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want an input error mentioning %q", op, err, want)
	}
}

func idxInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

func idxInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

func idxStr(name, s string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(s)}
}

func idxI64s(v ...int64) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }

// idxIota returns a float32 tensor of shape holding 0, 1, 2, ...
func idxIota(shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i)
	}
	return tensor.From(shape, d)
}

func idxCheck(t *testing.T, what string, got *tensor.Tensor, shape []int, want any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if !slices.Equal(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if fmt.Sprint(got.Data) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, want %v", what, got.Data, want)
	}
}

// stridedByElement is the element-by-element walk stridedCopy's runs
// replace: the reference it is checked against.
func stridedByElement[T any](src []T, shape, strides []int, base int) []T {
	n, _ := tensor.NumElements(shape)
	out := make([]T, n)
	it := tensor.NewIter(shape, strides).Start(0, base)
	for i := 0; it.Next(); i++ {
		out[i] = src[it.Off(0)]
	}
	return out
}

// TestStridedCopyMatchesElementWalk compares the run-copying walk with
// the element walk on random views (permutations, negative steps,
// broadcast and size-1 dimensions) of several element types.
func TestStridedCopyMatchesElementWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		rank := r.IntN(5)
		src := make([]int, rank)
		for i := range src {
			src[i] = 1 + r.IntN(4)
		}
		n, _ := tensor.NumElements(src)
		rows := tensor.Strides(src)
		// A random view: permuted axes, each reversed, sliced, or broadcast.
		perm := r.Perm(rank)
		shape, strides := make([]int, rank), make([]int, rank)
		base := 0
		for i, a := range perm {
			switch r.IntN(4) {
			case 0: // reversed
				shape[i], strides[i] = src[a], -rows[a]
				base += (src[a] - 1) * rows[a]
			case 1: // broadcast
				shape[i], strides[i] = 1+r.IntN(3), 0
			default:
				shape[i], strides[i] = src[a], rows[a]
			}
		}
		f := make([]float32, n)
		s := make([]string, n)
		h := make([]tensor.F16, n)
		for i := range f {
			f[i] = float32(i)
			s[i] = fmt.Sprint(i)
			h[i] = tensor.F16From(float32(i))
		}
		m, _ := tensor.NumElements(shape)
		if m == 0 {
			continue
		}
		gotF := make([]float32, m)
		stridedCopy(gotF, f, shape, strides, base)
		if want := stridedByElement(f, shape, strides, base); !slices.Equal(gotF, want) {
			t.Fatalf("view %v strides %v base %d of %v: %v, want %v", shape, strides, base, src, gotF, want)
		}
		gotS := make([]string, m)
		stridedCopy(gotS, s, shape, strides, base)
		if want := stridedByElement(s, shape, strides, base); !slices.Equal(gotS, want) {
			t.Fatalf("strings: %v, want %v", gotS, want)
		}
		gotH := make([]tensor.F16, m)
		stridedCopy(gotH, h, shape, strides, base)
		if want := stridedByElement(h, shape, strides, base); !slices.Equal(gotH, want) {
			t.Fatalf("FP16: %v, want %v", gotH, want)
		}
	}
}

func TestSliceEveryOpset(t *testing.T) {
	x := idxIota(3, 4)
	// opset 1–9: attributes
	y := idxRun1(t, 9, "Slice", []*onnxpb.Attribute{idxInts("starts", 1, -3), idxInts("ends", 100, -1), idxInts("axes", 0, 1)}, x)
	idxCheck(t, "Slice-1", y, []int{2, 2}, []float32{5, 6, 9, 10})
	// opset 10 on: inputs, negative steps, clamping, INT32 indices
	for _, c := range []struct {
		starts, ends, axes, steps []int64
		shape                     []int
		want                      []float32
	}{
		{[]int64{0}, []int64{math.MaxInt64}, []int64{1}, []int64{2}, []int{3, 2}, []float32{0, 2, 4, 6, 8, 10}},
		{[]int64{-1}, []int64{math.MinInt64}, []int64{1}, []int64{-1}, []int{3, 4}, []float32{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}},
		{[]int64{math.MaxInt64, 1}, []int64{math.MinInt64, 3}, []int64{0, -1}, []int64{-2, 1}, []int{2, 2}, []float32{9, 10, 1, 2}},
		{[]int64{1}, []int64{1}, []int64{0}, []int64{1}, []int{0, 4}, []float32{}},
		{[]int64{10}, []int64{20}, []int64{0}, []int64{1}, []int{0, 4}, []float32{}},
		{[]int64{0}, []int64{3}, []int64{0}, []int64{math.MaxInt64}, []int{1, 4}, []float32{0, 1, 2, 3}},
		{[]int64{2}, []int64{-10}, []int64{0}, []int64{math.MinInt64}, []int{1, 4}, []float32{8, 9, 10, 11}},
	} {
		y := idxRun1(t, 13, "Slice", nil, x, idxI64s(c.starts...), idxI64s(c.ends...), idxI64s(c.axes...), idxI64s(c.steps...))
		idxCheck(t, fmt.Sprintf("Slice %v:%v axes %v steps %v", c.starts, c.ends, c.axes, c.steps), y, c.shape, c.want)
	}
	i32 := func(v ...int32) *tensor.Tensor { return tensor.From([]int{len(v)}, v) }
	y = idxRun1(t, 13, "Slice", nil, x, i32(1), i32(3))
	idxCheck(t, "Slice INT32 default axes", y, []int{2, 4}, []float32{4, 5, 6, 7, 8, 9, 10, 11})
	// an empty input along a sliced axis
	y = idxRun1(t, 13, "Slice", nil, idxIota(0, 3), idxI64s(-1), idxI64s(0), idxI64s(0), idxI64s(-1))
	idxCheck(t, "Slice of an empty axis", y, []int{0, 3}, []float32{})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, idxI64s(0), idxI64s(1), idxI64s(0), idxI64s(0)}, "step is 0"},
		{[]*tensor.Tensor{x, idxI64s(0, 0), idxI64s(1, 1), idxI64s(1, -1), nil}, "repeat axis"},
		{[]*tensor.Tensor{x, idxI64s(0), idxI64s(1, 2)}, "differ in length"},
		{[]*tensor.Tensor{x, idxI64s(0), idxI64s(1), idxI64s(2)}, "out of range"},
		{[]*tensor.Tensor{x, idxI64s(0, 0, 0), idxI64s(1, 1, 1)}, "3 starts for rank 2"},
		{[]*tensor.Tensor{x, tensor.From([]int{1}, []float32{0}), idxI64s(1)}, "INT32 or INT64"},
	} {
		idxWantInputError(t, 13, "Slice", nil, c.ins, 1, c.want)
	}
}

func TestSplitVariants(t *testing.T) {
	x := idxIota(2, 7)
	// num_outputs (18): parts of ⌈7/3⌉, the last smaller
	outs, err := idxRunOp(t, 18, "Split", []*onnxpb.Attribute{idxInt("axis", -1), idxInt("num_outputs", 3)}, []*tensor.Tensor{x}, 3)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "part 0", outs[0], []int{2, 3}, []float32{0, 1, 2, 7, 8, 9})
	idxCheck(t, "part 2", outs[2], []int{2, 1}, []float32{6, 13})
	// split as an attribute (opset 11) and as an input (13), zero sizes allowed
	outs, err = idxRunOp(t, 11, "Split", []*onnxpb.Attribute{idxInt("axis", 1), idxInts("split", 0, 7)}, []*tensor.Tensor{x}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "empty part", outs[0], []int{2, 0}, []float32{})
	idxCheck(t, "whole part", outs[1], []int{2, 7}, x.Data)
	outs, err = idxRunOp(t, 13, "Split", []*onnxpb.Attribute{idxInt("axis", 1)}, []*tensor.Tensor{x, idxI64s(5, 2)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "split input", outs[1], []int{2, 2}, []float32{5, 6, 12, 13})
	// opset 1: the split input
	outs, err = idxRunOp(t, 7, "Split", []*onnxpb.Attribute{idxInt("axis", 0)}, []*tensor.Tensor{x}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "equal halves", outs[1], []int{1, 7}, []float32{7, 8, 9, 10, 11, 12, 13})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, idxI64s(3, 3)}, "sums to 6"},
		{[]*tensor.Tensor{x, idxI64s(8, -1)}, "invalid size"},
		{[]*tensor.Tensor{x, idxI64s(7)}, "1 entries for 2 outputs"},
	} {
		idxWantInputError(t, 13, "Split", []*onnxpb.Attribute{idxInt("axis", 1)}, c.ins, 2, c.want)
	}
	// 1 element cannot be cut in 3 parts of ⌈1/3⌉ = 1 with the last smaller
	idxWantInputError(t, 13, "Split", nil, []*tensor.Tensor{idxIota(1)}, 3, "cannot cut")
	// num_outputs must match the outputs: a malformed model
	_, err = Load(idxModel(18, "Split", []*onnxpb.Attribute{idxInt("num_outputs", 2)}, []*tensor.Tensor{x}, 3, tensor.Invalid))
	if err == nil {
		t.Error("Split with num_outputs 2 and 3 outputs loaded")
	}
}

func TestTileExpandRangeSize(t *testing.T) {
	x := idxIota(2, 2)
	y := idxRun1(t, 13, "Tile", nil, x, idxI64s(2, 3))
	idxCheck(t, "Tile", y, []int{4, 6}, []float32{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3})
	y = idxRun1(t, 13, "Tile", nil, x, idxI64s(0, 3))
	idxCheck(t, "Tile by 0", y, []int{0, 6}, []float32{})
	y = idxRun1(t, 13, "Expand", nil, idxIota(3, 1), idxI64s(2, 1, 4))
	idxCheck(t, "Expand", y, []int{2, 3, 4}, []float32{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2})
	y = idxRun1(t, 13, "Expand", nil, idxIota(3, 1), idxI64s(1, 1)) // bidirectional: stays [3,1]
	idxCheck(t, "Expand to a smaller shape", y, []int{3, 1}, []float32{0, 1, 2})
	y = idxRun1(t, 11, "Range", nil, tensor.Scalar(int64(10)), tensor.Scalar(int64(4)), tensor.Scalar(int64(-2)))
	idxCheck(t, "Range down", y, []int{3}, []int64{10, 8, 6})
	y = idxRun1(t, 11, "Range", nil, tensor.Scalar(int64(math.MinInt64)), tensor.Scalar(int64(math.MinInt64+3)), tensor.Scalar(int64(math.MaxInt64)))
	idxCheck(t, "Range of extremes", y, []int{1}, []int64{math.MinInt64})
	y = idxRun1(t, 11, "Range", nil, tensor.Scalar(int16(1)), tensor.Scalar(int16(1)), tensor.Scalar(int16(1)))
	idxCheck(t, "empty Range", y, []int{0}, []int16{})
	y = idxRun1(t, 27, "Range", nil, tensor.Scalar(tensor.F16From(0)), tensor.Scalar(tensor.F16From(1)), tensor.Scalar(tensor.F16From(0.25)))
	idxCheck(t, "FP16 Range", y, []int{4}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 0.25, 0.5, 0.75}))
	y = idxRun1(t, 13, "Size", nil, idxIota(3, 0, 2))
	idxCheck(t, "Size", y, nil, []int64{0})
}

// TestHugeOutputsAreInputErrors: shapes an untrusted request asks for
// beyond tensor.MaxElements are refused before anything is allocated.
func TestHugeOutputsAreInputErrors(t *testing.T) {
	x := idxIota(2, 2)
	big := int64(1) << 40
	for _, c := range []struct {
		op   string
		ins  []*tensor.Tensor
		want string
	}{
		{"Tile", []*tensor.Tensor{x, idxI64s(big, big)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, idxI64s(1<<20, 1<<20)}, "too many elements"},
		{"Tile", []*tensor.Tensor{x, idxI64s(-1, 2)}, "invalid"},
		{"Tile", []*tensor.Tensor{x, idxI64s(2)}, "do not fit rank 2"},
		{"Expand", []*tensor.Tensor{x, idxI64s(big, 1, 1)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, idxI64s(1<<20, 1<<20, 1, 1)}, "too many elements"},
		{"Expand", []*tensor.Tensor{x, idxI64s(-2, 2)}, "invalid dimension"},
		{"Expand", []*tensor.Tensor{x, idxI64s(3, 2)}, "cannot be broadcast"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int64(0)), tensor.Scalar(int64(math.MaxInt64)), tensor.Scalar(int64(1))}, "more than"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(1e30)), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(math.Inf(1))), tensor.Scalar(float32(1))}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(float64(0)), tensor.Scalar(float64(1)), tensor.Scalar(math.NaN())}, "no finite size"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int32(5)), tensor.Scalar(int32(0))}, "delta is 0"},
		{"Range", []*tensor.Tensor{tensor.Scalar(int32(0)), tensor.Scalar(int64(5)), tensor.Scalar(int32(1))}, "types"},
	} {
		idxWantInputError(t, 13, c.op, nil, c.ins, 1, c.want)
	}
}

// TestMovesKeepEveryElementType: the data-movement operators take every
// element type, FP16, BF16 and strings included.
func TestMovesKeepEveryElementType(t *testing.T) {
	for _, x := range []*tensor.Tensor{
		tensor.From([]int{2, 3}, []string{"a", "b", "c", "d", "e", "f"}),
		tensor.From([]int{2, 3}, tensor.Float32ToHalf[tensor.F16]([]float32{0, 1, 2, 3, 4, 5})),
		tensor.From([]int{2, 3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0, 1, 2, 3, 4, 5})),
		tensor.From([]int{2, 3}, []bool{true, false, true, false, false, true}),
	} {
		d := x.Data
		pick := func(idx ...int) any { return gather(d, idx) }
		idxCheck(t, "Transpose "+x.DType.String(), idxRun1(t, 13, "Transpose", nil, x), []int{3, 2}, pick(0, 3, 1, 4, 2, 5))
		idxCheck(t, "Concat "+x.DType.String(), idxRun1(t, 13, "Concat", []*onnxpb.Attribute{idxInt("axis", 1)}, x, x), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		idxCheck(t, "Slice "+x.DType.String(), idxRun1(t, 13, "Slice", nil, x, idxI64s(-1), idxI64s(0), idxI64s(1), idxI64s(-2)), []int{2, 1}, pick(2, 5))
		idxCheck(t, "Tile "+x.DType.String(), idxRun1(t, 13, "Tile", nil, x, idxI64s(1, 2)), []int{2, 6}, pick(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5))
		idxCheck(t, "Expand "+x.DType.String(), idxRun1(t, 13, "Expand", nil, x, idxI64s(2, 1, 1)), []int{2, 2, 3}, pick(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5))
	}
}

// transposeByElement is the element-by-element Transpose that the
// run-copying one replaced (an index per element, then a gather): the
// benchmarks' baseline.
func transposeByElement(x []float32, shape []int, p []int) []float32 {
	r := len(shape)
	out := make([]int, r)
	for i, a := range p {
		out[i] = shape[a]
	}
	rows := tensor.Strides(shape)
	src := make([]int, r)
	for i, a := range p {
		src[i] = rows[a]
	}
	idx := make([]int, len(x))
	it := tensor.NewIter(out, src)
	for i := 0; it.Next(); i++ {
		idx[i] = it.Off(0)
	}
	y := make([]float32, len(x))
	for i, j := range idx {
		y[i] = x[j]
	}
	return y
}

func TestTransposeByElementAgrees(t *testing.T) {
	x := idxIota(2, 3, 4, 5)
	for _, p := range [][]int{{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3}} {
		got := transpose(x, p)
		if want := transposeByElement(x.Data.([]float32), x.Shape, p); !slices.Equal(got.Data.([]float32), want) {
			t.Fatalf("perm %v: %v, want %v", p, got.Data, want)
		}
	}
}

// BenchmarkTranspose moves attention heads, 1×128×4×64 → 1×4×128×64:
// runs of 64 copied whole against the element-by-element baseline.
func BenchmarkTranspose(b *testing.B) {
	x := idxIota(1, 128, 4, 64)
	p := []int{0, 2, 1, 3}
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			transpose(x, p)
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			transposeByElement(x.Data.([]float32), x.Shape, p)
		}
	})
}

// BenchmarkSplit cuts 1×128×768 (a fused QKV projection) into three
// 1×128×256 along the last axis, and BenchmarkSlice takes the middle one.
func BenchmarkSplit(b *testing.B) {
	x := idxIota(1, 128, 768)
	rows := tensor.Strides(x.Shape)
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := splitTensor(x, 2, []int{256, 256, 256}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			for i := 0; i < 3; i++ {
				stridedByElement(x.Data.([]float32), []int{1, 128, 256}, rows, 256*i)
			}
		}
	})
}

func BenchmarkSlice(b *testing.B) {
	x := idxIota(1, 128, 768)
	rows := tensor.Strides(x.Shape)
	starts, ends, axes := []int64{256}, []int64{512}, []int64{2}
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len() / 3))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sliceTensor(x, starts, ends, axes, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len() / 3))
		b.ReportAllocs()
		for b.Loop() {
			stridedByElement(x.Data.([]float32), []int{1, 128, 256}, rows, 256)
		}
	})
}
