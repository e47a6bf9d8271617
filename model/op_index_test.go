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

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func idxRandF64(r *rand.Rand, shape ...int) *tensor.Tensor {
	n, _ := tensor.NumElements(shape)
	d := make([]float64, n)
	for i := range d {
		d[i] = r.NormFloat64()
	}
	return tensor.From(shape, d)
}

// gatherByElement is Gather element by element (an index per element):
// the reference and the benchmark baseline of gatherAxis's row copies.
func gatherByElement(x *tensor.Tensor, idx []int64, a int) []float32 {
	outer, dim, inner := idxGeometry(x.Shape, a)
	d := x.Data.([]float32)
	out := make([]float32, 0, outer*len(idx)*inner)
	for o := 0; o < outer; o++ {
		for _, i := range idx {
			if i < 0 {
				i += int64(dim)
			}
			for j := 0; j < inner; j++ {
				out = append(out, d[(o*dim+int(i))*inner+j])
			}
		}
	}
	return out
}

func TestGather(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := idxIota(3, 4, 5)
	for a := 0; a < 3; a++ {
		idx := make([]int64, 7)
		for i := range idx {
			idx[i] = int64(r.IntN(2*x.Shape[a]) - x.Shape[a])
		}
		y := idxRun1(t, 13, "Gather", []*onnxpb.Attribute{idxInt("axis", int64(a))}, x, idxI64s(idx...))
		shape := slices.Clone(x.Shape)
		shape[a] = 7
		idxCheck(t, fmt.Sprintf("Gather axis %d", a), y, shape, gatherByElement(x, idx, a))
	}
	// scalar INT32 indices drop the axis
	y := idxRun1(t, 13, "Gather", []*onnxpb.Attribute{idxInt("axis", 1)}, x, tensor.Scalar(int32(-1)))
	idxCheck(t, "Gather scalar index", y, []int{3, 5}, gatherByElement(x, []int64{3}, 1))
	// strings, and an empty table with no indices
	s := tensor.From([]int{3}, []string{"a", "b", "c"})
	idxCheck(t, "Gather strings", idxRun1(t, 13, "Gather", nil, s, idxI64s(2, 0, 2)), []int{3}, []string{"c", "a", "c"})
	idxCheck(t, "Gather empty", idxRun1(t, 13, "Gather", nil, idxIota(0, 4), tensor.From([]int{0}, []int64{})), []int{0, 4}, []float32{})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, idxI64s(0, 3)}, "index 3 is out of range"},
		{[]*tensor.Tensor{x, idxI64s(-4)}, "index -4 is out of range"},
		{[]*tensor.Tensor{idxIota(0, 4), idxI64s(0)}, "out of range for an axis of 0"},
		{[]*tensor.Tensor{x, tensor.From([]int{1}, []float32{0})}, "INT32 or INT64"},
		{[]*tensor.Tensor{idxIota(1, 1<<20), tensor.From([]int{1 << 12}, make([]int64, 1<<12))}, "too many elements"},
	} {
		idxWantInputError(t, 13, "Gather", nil, c.ins, 1, c.want)
	}
}

func TestGatherElementsAndND(t *testing.T) {
	x := idxIota(2, 3)
	ind := tensor.From([]int{2, 2}, []int64{2, -3, 1, 0})
	idxCheck(t, "GatherElements", idxRun1(t, 13, "GatherElements", []*onnxpb.Attribute{idxInt("axis", 1)}, x, ind), []int{2, 2}, []float32{2, 0, 4, 3})
	idxWantInputError(t, 13, "GatherElements", []*onnxpb.Attribute{idxInt("axis", 1)}, []*tensor.Tensor{x, tensor.From([]int{2, 1}, []int64{0, 3})}, 1, "out of range")
	idxWantInputError(t, 13, "GatherElements", nil, []*tensor.Tensor{x, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0})}, 1, "do not fit")
	idxWantInputError(t, 13, "GatherElements", nil, []*tensor.Tensor{x, idxI64s(0)}, 1, "rank 1, data rank 2")

	d := idxIota(2, 2, 2)
	idxCheck(t, "GatherND", idxRun1(t, 13, "GatherND", nil, d, tensor.From([]int{2, 2}, []int64{1, 0, -1, 1})), []int{2, 2}, []float32{4, 5, 6, 7})
	idxCheck(t, "GatherND batch_dims", idxRun1(t, 13, "GatherND", []*onnxpb.Attribute{idxInt("batch_dims", 1)}, d, tensor.From([]int{2, 1, 2}, []int64{1, 1, 0, 0})), []int{2, 1}, []float32{3, 4})
	idxWantInputError(t, 13, "GatherND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0})}, 1, "address 4 dimensions of 3")
	idxWantInputError(t, 13, "GatherND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{2})}, 1, "out of range")
	idxWantInputError(t, 13, "GatherND", []*onnxpb.Attribute{idxInt("batch_dims", 1)}, []*tensor.Tensor{d, tensor.From([]int{3, 1}, []int64{0, 0, 0})}, 1, "batch dimensions differ")
	idxWantInputError(t, 13, "GatherND", []*onnxpb.Attribute{idxInt("batch_dims", 3)}, []*tensor.Tensor{d, idxI64s(0)}, 1, "batch_dims 3")
}

func TestScatters(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int32{1, 2, 3, 4, 5, 6})
	ind := tensor.From([]int{2, 2}, []int64{0, 0, 2, -1})
	upd := tensor.From([]int{2, 2}, []int32{10, 20, 30, 40})
	for red, want := range map[string][]int32{
		"none": {20, 2, 3, 4, 5, 40},
		"add":  {31, 2, 3, 4, 5, 76},
		"mul":  {200, 2, 3, 4, 5, 7200},
		"max":  {20, 2, 3, 4, 5, 40},
		"min":  {1, 2, 3, 4, 5, 6},
	} {
		y := idxRun1(t, 18, "ScatterElements", []*onnxpb.Attribute{idxInt("axis", 1), idxStr("reduction", red)}, x, ind, upd)
		idxCheck(t, "ScatterElements "+red, y, []int{2, 3}, want)
	}
	if _, err := Load(idxModel(13, "ScatterElements", []*onnxpb.Attribute{idxStr("reduction", "add")}, []*tensor.Tensor{x, ind, upd}, 1, tensor.Invalid)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("reduction add at opset 13: %v, want ErrUnsupported", err)
	}
	if _, err := Load(idxModel(16, "ScatterElements", []*onnxpb.Attribute{idxStr("reduction", "max")}, []*tensor.Tensor{x, ind, upd}, 1, tensor.Invalid)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("reduction max at opset 16: %v, want ErrUnsupported", err)
	}
	// FP16 reductions compute in float32
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3}))
	hu := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25}))
	y := idxRun1(t, 18, "ScatterElements", []*onnxpb.Attribute{idxStr("reduction", "add")}, h, idxI64s(1, 1), hu)
	idxCheck(t, "FP16 add", y, []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{1, 2.75, 3}))
	// Scatter (opset 9–10) is ScatterElements without reductions
	y = idxRun1(t, 10, "Scatter", []*onnxpb.Attribute{idxInt("axis", 1)}, x, ind, upd)
	idxCheck(t, "Scatter", y, []int{2, 3}, []int32{20, 2, 3, 4, 5, 40})
	strs := tensor.From([]int{3}, []string{"a", "b", "c"})
	idxCheck(t, "ScatterElements strings", idxRun1(t, 13, "ScatterElements", nil, strs, idxI64s(2), tensor.From([]int{1}, []string{"z"})), []int{3}, []string{"a", "b", "z"})
	idxWantInputError(t, 18, "ScatterElements", []*onnxpb.Attribute{idxStr("reduction", "add")}, []*tensor.Tensor{strs, idxI64s(2), tensor.From([]int{1}, []string{"z"})}, 1, "does not take BYTES")
	idxWantInputError(t, 13, "ScatterElements", []*onnxpb.Attribute{idxInt("axis", 1)}, []*tensor.Tensor{x, tensor.From([]int{1, 1}, []int64{3}), tensor.From([]int{1, 1}, []int32{0})}, 1, "out of range")
	idxWantInputError(t, 13, "ScatterElements", nil, []*tensor.Tensor{x, ind, tensor.From([]int{1, 2}, []int32{0, 0})}, 1, "differ in shape")

	d := idxIota(2, 2)
	y = idxRun1(t, 18, "ScatterND", []*onnxpb.Attribute{idxStr("reduction", "mul")}, d, tensor.From([]int{2, 1}, []int64{1, 1}), tensor.From([]int{2, 2}, []float32{2, 2, 3, 3}))
	idxCheck(t, "ScatterND mul", y, []int{2, 2}, []float32{0, 1, 12, 18})
	y = idxRun1(t, 13, "ScatterND", nil, d, tensor.From([]int{1, 2}, []int64{-1, 0}), tensor.From([]int{1}, []float32{9}))
	idxCheck(t, "ScatterND element", y, []int{2, 2}, []float32{0, 1, 9, 3})
	idxWantInputError(t, 13, "ScatterND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{2}), tensor.From([]int{1, 2}, []float32{0, 0})}, 1, "out of range")
	idxWantInputError(t, 13, "ScatterND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{0}), tensor.From([]int{1, 3}, []float32{0, 0, 0})}, 1, "updates have shape")
}

func TestTensorScatter(t *testing.T) {
	cache := idxIota(2, 4, 1)
	upd := tensor.From([]int{2, 3, 1}, []float32{-1, -2, -3, -4, -5, -6})
	w := idxI64s(3, 1)
	y := idxRun1(t, 24, "TensorScatter", []*onnxpb.Attribute{idxStr("mode", "circular")}, cache, upd, w)
	idxCheck(t, "circular", y, []int{2, 4, 1}, []float32{-2, -3, 2, -1, 4, -4, -5, -6})
	y = idxRun1(t, 24, "TensorScatter", nil, cache, upd)
	idxCheck(t, "linear from 0", y, []int{2, 4, 1}, []float32{-1, -2, -3, 3, -4, -5, -6, 7})
	idxWantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, upd, w}, 1, "leaves no room")
	idxWantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, upd, idxI64s(0)}, 1, "shape [2]")
	idxWantInputError(t, 24, "TensorScatter", nil, []*tensor.Tensor{cache, idxIota(2, 5, 1)}, 1, "does not fit")
	idxWantInputError(t, 24, "TensorScatter", []*onnxpb.Attribute{idxInt("axis", 0)}, []*tensor.Tensor{cache, upd}, 1, "batch axis")
}

func TestCompressNonZeroOneHot(t *testing.T) {
	x := idxIota(2, 3)
	cond := tensor.From([]int{3}, []bool{true, false, true})
	idxCheck(t, "Compress axis 1", idxRun1(t, 11, "Compress", []*onnxpb.Attribute{idxInt("axis", -1)}, x, cond), []int{2, 2}, []float32{0, 2, 3, 5})
	idxCheck(t, "Compress flat", idxRun1(t, 11, "Compress", nil, x, cond), []int{2}, []float32{0, 2})
	idxWantInputError(t, 11, "Compress", []*onnxpb.Attribute{idxInt("axis", 0)}, []*tensor.Tensor{x, cond}, 1, "selects entry 2 of an axis of 2")

	idxCheck(t, "NonZero", idxRun1(t, 13, "NonZero", nil, tensor.From([]int{2, 2}, []int32{0, 3, -1, 0})), []int{2, 2}, []int64{0, 1, 1, 0})
	idxCheck(t, "NonZero scalar", idxRun1(t, 13, "NonZero", nil, tensor.Scalar(float32(2))), []int{1, 1}, []int64{0})
	idxCheck(t, "NonZero none", idxRun1(t, 13, "NonZero", nil, tensor.From([]int{2}, []bool{false, false})), []int{1, 0}, []int64{})

	ind := tensor.From([]int{3}, []int64{1, -1, 7})
	vals := tensor.From([]int{2}, []string{"off", "on"})
	y := idxRun1(t, 11, "OneHot", nil, ind, tensor.Scalar(float32(3.7)), vals)
	idxCheck(t, "OneHot", y, []int{3, 3}, []string{"off", "on", "off", "off", "off", "on", "off", "off", "off"})
	y = idxRun1(t, 11, "OneHot", []*onnxpb.Attribute{idxInt("axis", 0)}, ind, tensor.Scalar(int64(2)), tensor.From([]int{2}, []int32{0, 5}))
	idxCheck(t, "OneHot axis 0", y, []int{2, 3}, []int32{0, 0, 0, 5, 5, 0})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(1) << 40), vals}, "depth 1.099511627776e+12 is invalid"},
		{[]*tensor.Tensor{tensor.From([]int{1 << 12}, make([]int64, 1<<12)), tensor.Scalar(int64(1 << 20)), vals}, "too many elements"},
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(-1)), vals}, "is invalid"},
		{[]*tensor.Tensor{ind, tensor.Scalar(float32(math.NaN())), vals}, "is invalid"},
		{[]*tensor.Tensor{ind, tensor.Scalar(int64(2)), tensor.From([]int{3}, []string{"a", "b", "c"})}, "[off, on]"},
	} {
		idxWantInputError(t, 11, "OneHot", nil, c.ins, 1, c.want)
	}
}

func TestTopK(t *testing.T) {
	x := tensor.From([]int{2, 4}, []float32{3, 1, 3, float32(math.NaN()), 0, 2, 2, -1})
	outs, err := idxRunOp(t, 11, "TopK", nil, []*tensor.Tensor{x, idxI64s(3)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(outs[0].Data) != "[NaN 3 3 2 2 0]" {
		t.Errorf("TopK values %v", outs[0].Data)
	}
	idxCheck(t, "TopK indices (ties: lower index first)", outs[1], []int{2, 3}, []int64{3, 0, 2, 1, 2, 0})
	outs, err = idxRunOp(t, 11, "TopK", []*onnxpb.Attribute{idxInt("largest", 0), idxInt("axis", 0)}, []*tensor.Tensor{x, idxI64s(1)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "TopK smallest", outs[1], []int{1, 4}, []int64{1, 0, 1, 1})
	// uint64 beyond float64 precision orders exactly
	u := tensor.From([]int{3}, []uint64{1<<63 + 1, 1<<63 + 3, 1<<63 + 2})
	outs, err = idxRunOp(t, 11, "TopK", nil, []*tensor.Tensor{u, idxI64s(2)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "TopK uint64", outs[1], []int{2}, []int64{1, 2})
	// opset 1–9: k as an attribute
	outs, err = idxRunOp(t, 9, "TopK", []*onnxpb.Attribute{idxInt("k", 1)}, []*tensor.Tensor{x}, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "TopK-1", outs[1], []int{2, 1}, []int64{3, 1})
	idxWantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, idxI64s(5)}, 2, "K 5 is out of range")
	idxWantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, idxI64s(-1)}, 2, "K -1 is out of range")
	idxWantInputError(t, 11, "TopK", nil, []*tensor.Tensor{x, idxI64s(1, 2)}, 2, "one value")
}

func TestUnique(t *testing.T) {
	s := tensor.From([]int{5}, []string{"b", "a", "b", "c", "a"})
	outs, err := idxRunOp(t, 11, "Unique", nil, []*tensor.Tensor{s}, 4)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "Unique strings", outs[0], []int{3}, []string{"a", "b", "c"})
	idxCheck(t, "first indices", outs[1], []int{3}, []int64{1, 0, 3})
	idxCheck(t, "inverse", outs[2], []int{5}, []int64{1, 0, 1, 2, 0})
	idxCheck(t, "counts", outs[3], []int{3}, []int64{2, 2, 1})
	outs, err = idxRunOp(t, 11, "Unique", []*onnxpb.Attribute{idxInt("sorted", 0), idxInt("axis", 1)}, []*tensor.Tensor{tensor.From([]int{2, 3}, []int32{2, 1, 2, 5, 0, 5})}, 4)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "Unique columns in order", outs[0], []int{2, 2}, []int32{2, 1, 5, 0})
	idxCheck(t, "inverse", outs[2], []int{3}, []int64{0, 1, 0})
	outs, err = idxRunOp(t, 11, "Unique", nil, []*tensor.Tensor{tensor.From([]int{0}, []float32{})}, 4)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "Unique of nothing", outs[3], []int{0}, []int64{})
}

func TestTriluEyeLikeHardmax(t *testing.T) {
	x := idxIota(2, 3)
	idxCheck(t, "triu k=1", idxRun1(t, 14, "Trilu", nil, x, tensor.Scalar(int64(1))), []int{2, 3}, []float32{0, 1, 2, 0, 0, 5})
	idxCheck(t, "tril k=-1", idxRun1(t, 14, "Trilu", []*onnxpb.Attribute{idxInt("upper", 0)}, x, tensor.Scalar(int64(-1))), []int{2, 3}, []float32{0, 0, 0, 3, 0, 0})
	idxCheck(t, "triu k=max", idxRun1(t, 14, "Trilu", nil, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	idxCheck(t, "tril k=min", idxRun1(t, 14, "Trilu", []*onnxpb.Attribute{idxInt("upper", 0)}, x, tensor.Scalar(int64(math.MinInt64))), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	idxCheck(t, "tril k=max", idxRun1(t, 14, "Trilu", []*onnxpb.Attribute{idxInt("upper", 0)}, x, tensor.Scalar(int64(math.MaxInt64))), []int{2, 3}, x.Data)

	m, err := Load(idxModel(22, "EyeLike", []*onnxpb.Attribute{idxInt("dtype", int64(onnxpb.Bool)), idxInt("k", -1)}, []*tensor.Tensor{x}, 1, tensor.Bool))
	if err != nil {
		t.Fatal(err)
	}
	y, err := idxRunModel(m, x)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "EyeLike bool k=-1", y, []int{2, 3}, []bool{false, false, false, true, false, false})
	idxCheck(t, "EyeLike k=max", idxRun1(t, 22, "EyeLike", []*onnxpb.Attribute{idxInt("k", math.MaxInt64)}, x), []int{2, 3}, []float32{0, 0, 0, 0, 0, 0})
	idxWantInputError(t, 22, "EyeLike", nil, []*tensor.Tensor{idxIota(3)}, 1, "2-D")

	h := tensor.From([]int{2, 2, 2}, []float32{1, 5, 5, 2, 0, 0, 0, 0})
	idxCheck(t, "Hardmax-13 axis -1", idxRun1(t, 13, "Hardmax", nil, h), []int{2, 2, 2}, []float32{0, 1, 1, 0, 1, 0, 1, 0})
	idxCheck(t, "Hardmax-11 coerced at axis 1", idxRun1(t, 11, "Hardmax", nil, h), []int{2, 2, 2}, []float32{0, 1, 0, 0, 1, 0, 0, 0})
	hf := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{1, 3, 2}))
	idxCheck(t, "Hardmax BF16", idxRun1(t, 13, "Hardmax", nil, hf), []int{3}, tensor.Float32ToHalf[tensor.BF16]([]float32{0, 1, 0}))
}

func idxRunModel(m *Model, x *tensor.Tensor) (*tensor.Tensor, error) {
	out, err := m.Run(context.Background(), map[string]*tensor.Tensor{"x0": x}, nil)
	if err != nil {
		return nil, err
	}
	return out["y0"], nil
}

func TestCumulativeReverseSequenceDet(t *testing.T) {
	x := tensor.From([]int{2, 3}, []int32{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		op        string
		exclusive int64
		reverse   int64
		want      []int32
	}{
		{"CumSum", 0, 0, []int32{1, 3, 6, 4, 9, 15}},
		{"CumSum", 1, 1, []int32{5, 3, 0, 11, 6, 0}},
		{"CumProd", 1, 0, []int32{1, 1, 2, 1, 4, 20}},
		{"CumProd", 0, 1, []int32{6, 6, 3, 120, 30, 6}},
	} {
		y := idxRun1(t, 26, c.op, []*onnxpb.Attribute{idxInt("exclusive", c.exclusive), idxInt("reverse", c.reverse)}, x, tensor.Scalar(int32(-1)))
		idxCheck(t, fmt.Sprintf("%s exclusive=%d reverse=%d", c.op, c.exclusive, c.reverse), y, []int{2, 3}, c.want)
	}
	h := tensor.From([]int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.25, 2}))
	idxCheck(t, "CumSum FP16", idxRun1(t, 14, "CumSum", nil, h, tensor.Scalar(int64(0))), []int{3}, tensor.Float32ToHalf[tensor.F16]([]float32{0.5, 0.75, 2.75}))
	idxWantInputError(t, 14, "CumSum", nil, []*tensor.Tensor{x, tensor.Scalar(int64(2))}, 1, "out of range")

	seq := tensor.From([]int{3, 2}, []string{"a0", "b0", "a1", "b1", "a2", "b2"})
	y := idxRun1(t, 10, "ReverseSequence", nil, seq, idxI64s(3, 0))
	idxCheck(t, "ReverseSequence", y, []int{3, 2}, []string{"a2", "b0", "a1", "b1", "a0", "b2"})
	idxWantInputError(t, 10, "ReverseSequence", nil, []*tensor.Tensor{seq, idxI64s(4, 0)}, 1, "length 4 is out of range")
	idxWantInputError(t, 10, "ReverseSequence", nil, []*tensor.Tensor{seq, idxI64s(1)}, 1, "batch of 2")

	d := tensor.From([]int{2, 3, 3}, []float64{2, 0, 1, 1, 3, 2, 1, 1, 2, 1, 2, 3, 2, 4, 6, 0, 1, 1})
	y = idxRun1(t, 22, "Det", nil, d)
	if got := y.Data.([]float64); !slices.Equal(y.Shape, []int{2}) || math.Abs(got[0]-6) > 1e-12 || got[1] != 0 {
		t.Errorf("Det %v %v, want [6 0]", y.Shape, y.Data)
	}
	idxCheck(t, "Det of 0×0", idxRun1(t, 22, "Det", nil, tensor.From([]int{2, 0, 0}, []float32{})), []int{2}, []float32{1, 1})
	idxWantInputError(t, 22, "Det", nil, []*tensor.Tensor{idxIota(2, 3)}, 1, "square")
}

func TestBitCast(t *testing.T) {
	f := tensor.From([]int{2}, []float32{1, -2})
	m, err := Load(idxModel(26, "BitCast", []*onnxpb.Attribute{idxInt("to", int64(onnxpb.Uint32))}, []*tensor.Tensor{f}, 1, tensor.Uint32))
	if err != nil {
		t.Fatal(err)
	}
	y, err := idxRunModel(m, f)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "BitCast FP32→UINT32", y, []int{2}, []uint32{math.Float32bits(1), math.Float32bits(-2)})
	h := tensor.From([]int{1}, []tensor.F16{0xbc00})
	m, err = Load(idxModel(26, "BitCast", []*onnxpb.Attribute{idxInt("to", int64(onnxpb.Int16))}, []*tensor.Tensor{h}, 1, tensor.Int16))
	if err != nil {
		t.Fatal(err)
	}
	if y, err = idxRunModel(m, h); err != nil || fmt.Sprint(y.Data) != "[-17408]" {
		t.Errorf("BitCast FP16→INT16 = %v, %v", y, err)
	}
	if _, err = idxRunModel(m, f); !errors.Is(err, ErrInput) {
		t.Errorf("BitCast FP32→INT16: %v, want an input error", err)
	}
	if _, err = Load(idxModel(26, "BitCast", []*onnxpb.Attribute{idxInt("to", int64(onnxpb.String))}, []*tensor.Tensor{f}, 1, tensor.String)); err == nil {
		t.Error("BitCast to strings loaded")
	}
}

// einsumEquations are equations the lowering to matrix products must
// agree with the strided walk on.
var einsumEquations = []string{
	"ij,jk->ik", "bij,bjk->bik", "i,i", "ij->ji", "ii->i", "...ii->...i", "ij->i", "ij,ij->ij",
	"ij,kj->ik", "abc,cd,de->abe", "i,j->ij", "ab,b", "...ij,...jk", "ijk,ikl->jl", "ii", ",i->i",
	"bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "ij,jk,kl->il", "aab,bc->ac", "ab,cd->", "Ab,bA->A",
}

func TestEinsumLoweringMatchesGeneralWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	exec := gemm.Default()
	for _, eq := range einsumEquations {
		for trial := 0; trial < 3; trial++ {
			size := map[byte]int{}
			lhs, _, _ := strings.Cut(eq, "->")
			terms := strings.Split(lhs, ",")
			var ins []*tensor.Tensor
			for _, term := range terms {
				var shape []int
				for i := 0; i < len(term); i++ {
					if term[i] == '.' {
						shape = append(shape, 2, 3)
						i += 2
						continue
					}
					if _, ok := size[term[i]]; !ok {
						size[term[i]] = 1 + r.IntN(4)
					}
					shape = append(shape, size[term[i]])
				}
				ins = append(ins, idxRandF64(r, shape...))
			}
			sp, err := parseEinsum(eq, len(ins))
			if err != nil {
				t.Fatal(err)
			}
			products := 0
			got, err := einsum(sp, ins, func(a, b *tensor.Tensor) (*tensor.Tensor, error) {
				products++
				return matmul(exec, a, b)
			})
			if err != nil {
				t.Fatalf("%s: %v", eq, err)
			}
			ops, out, sz, broadcast, err := einsumBind(sp, ins)
			if err != nil || broadcast {
				t.Fatalf("%s: bind: %v (broadcast %v)", eq, err, broadcast)
			}
			want, err := einsumGeneral(ops, out, sz)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Shape, want.Shape) {
				t.Fatalf("%s: shape %v, want %v", eq, got.Shape, want.Shape)
			}
			g, w := got.Data.([]float64), want.Data.([]float64)
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-9*(1+math.Abs(w[i])) {
					t.Fatalf("%s: [%d] = %v, want %v", eq, i, g[i], w[i])
				}
			}
			if len(ins) > 1 && products != len(ins)-1 {
				t.Errorf("%s: %d matrix products for %d operands", eq, products, len(ins))
			}
		}
	}
}

// TestEinsumThroughTheModel runs Einsum as a node: FP32 batched products
// on the float kernels, broadcast ellipses on the general walk, narrow
// integers and FP16, and its input errors.
func TestEinsumThroughTheModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	eq := []*onnxpb.Attribute{idxStr("equation", "bhqd, bhkd -> bhqk")}
	q, k := idxF32(idxRandF64(r, 1, 2, 5, 8)), idxF32(idxRandF64(r, 1, 2, 6, 8))
	y := idxRun1(t, 12, "Einsum", eq, q, k)
	want, _ := matmul(gemm.Default(), q, transpose(k, []int{0, 1, 3, 2}))
	if !slices.Equal(y.Shape, []int{1, 2, 5, 6}) || !idxClose(y.Data.([]float32), want.Data.([]float32), 1e-5) {
		t.Errorf("Einsum QKᵀ differs from MatMul: %v", y.Shape)
	}
	// ellipses broadcast [2,1] with [3]
	a, b := idxIota(2, 1, 2, 2), idxIota(3, 2, 1)
	y = idxRun1(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "...ij,...jk->...ik")}, a, b)
	ae := idxRun1(t, 13, "Expand", nil, a, idxI64s(2, 3, 2, 2))
	be := idxRun1(t, 13, "Expand", nil, b, idxI64s(2, 3, 2, 1))
	want2 := idxRun1(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "...ij,...jk->...ik")}, ae, be)
	idxCheck(t, "broadcast ellipsis", y, []int{2, 3, 2, 1}, want2.Data)
	i8 := tensor.From([]int{2}, []int8{100, 100})
	idxCheck(t, "INT8 wraps", idxRun1(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "i,i")}, i8, i8), nil, []int8{32}) // 20000 mod 256
	h := tensor.From([]int{2}, tensor.Float32ToHalf[tensor.F16]([]float32{1.5, 2}))
	idxCheck(t, "FP16", idxRun1(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "i,i->")}, h, h), nil, tensor.Float32ToHalf[tensor.F16]([]float32{6.25}))
	idxWantInputError(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "ij,jk")}, []*tensor.Tensor{idxIota(2, 3), idxIota(4, 2)}, 1, "sizes differ")
	idxWantInputError(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "ij,jk")}, []*tensor.Tensor{idxIota(2, 3, 1), idxIota(3, 2)}, 1, "rank 3")
	// a broadcast walk, and an intermediate product, beyond tensor.MaxElements
	idxWantInputError(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "i,j,ij->")}, []*tensor.Tensor{idxIota(1 << 16), idxIota(1 << 16), idxIota(1, 1)}, 1, "too many label combinations")
	idxWantInputError(t, 12, "Einsum", []*onnxpb.Attribute{idxStr("equation", "i,j,ik,jk->")}, []*tensor.Tensor{idxIota(1 << 16), idxIota(1 << 16), idxIota(1<<16, 1), idxIota(1<<16, 1)}, 1, "intermediate product")
	for _, bad := range []string{"ij,jk->iz", "i$->i", "ii->ii", "i,j"} {
		if _, err := Load(idxModel(12, "Einsum", []*onnxpb.Attribute{idxStr("equation", bad)}, []*tensor.Tensor{q}, 1, tensor.Invalid)); err == nil {
			t.Errorf("Einsum %q loaded", bad)
		}
	}
}

func idxF32(x *tensor.Tensor) *tensor.Tensor {
	y, _ := castTo(x, tensor.Float32)
	return y
}

func idxClose(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol*(1+math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}

// BenchmarkGather looks up 128 token ids in a 30522×256 embedding table:
// rows copied whole against element-by-element indexing.
func BenchmarkGather(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	table := idxIota(30522, 256)
	ids := make([]int64, 128)
	for i := range ids {
		ids[i] = int64(r.IntN(30522))
	}
	indices := tensor.From([]int{1, 128}, ids)
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(128 * 256 * 4)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gatherAxis(table, indices, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("elements", func(b *testing.B) {
		b.SetBytes(128 * 256 * 4)
		b.ReportAllocs()
		for b.Loop() {
			gatherByElement(table, ids, 0)
		}
	})
}

// TestIndexOpsNeverPanic feeds the indexing and shape operators random
// tensors (odd ranks, empty dimensions, extreme index values, wrong
// types): each run returns a value or an input error, never panics.
func TestIndexOpsNeverPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	extremes := []int64{math.MinInt64, math.MaxInt64, -1 << 40, 1 << 40, -3, -1, 0, 1, 2, 3}
	randTensor := func() *tensor.Tensor {
		shape := make([]int, r.IntN(4))
		for i := range shape {
			shape[i] = r.IntN(4)
		}
		n, _ := tensor.NumElements(shape)
		switch r.IntN(4) {
		case 0:
			d := make([]int64, n)
			for i := range d {
				d[i] = extremes[r.IntN(len(extremes))]
			}
			return tensor.From(shape, d)
		case 1:
			d := make([]int32, n)
			for i := range d {
				d[i] = int32(r.IntN(7) - 3)
			}
			return tensor.From(shape, d)
		case 2:
			d := make([]bool, n)
			for i := range d {
				d[i] = r.IntN(2) == 0
			}
			return tensor.From(shape, d)
		}
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(r.NormFloat64() * 3)
		}
		return tensor.From(shape, d)
	}
	ops := []struct {
		op    string
		opset int64
		ins   int
		outs  int
		attrs []*onnxpb.Attribute
	}{
		{"Gather", 13, 2, 1, []*onnxpb.Attribute{idxInt("axis", -1)}},
		{"GatherElements", 13, 2, 1, nil},
		{"GatherND", 13, 2, 1, []*onnxpb.Attribute{idxInt("batch_dims", 1)}},
		{"ScatterElements", 18, 3, 1, []*onnxpb.Attribute{idxStr("reduction", "mul")}},
		{"ScatterND", 18, 3, 1, []*onnxpb.Attribute{idxStr("reduction", "add")}},
		{"TensorScatter", 24, 3, 1, []*onnxpb.Attribute{idxStr("mode", "circular")}},
		{"Compress", 11, 2, 1, []*onnxpb.Attribute{idxInt("axis", 0)}},
		{"NonZero", 13, 1, 1, nil},
		{"OneHot", 11, 3, 1, nil},
		{"TopK", 11, 2, 2, nil},
		{"ArgMin", 13, 1, 1, nil},
		{"Unique", 11, 1, 4, []*onnxpb.Attribute{idxInt("axis", 0)}},
		{"Trilu", 14, 2, 1, nil},
		{"EyeLike", 22, 1, 1, []*onnxpb.Attribute{idxInt("k", -2)}},
		{"Hardmax", 13, 1, 1, nil},
		{"CumSum", 14, 2, 1, []*onnxpb.Attribute{idxInt("reverse", 1)}},
		{"ReverseSequence", 10, 2, 1, nil},
		{"Det", 22, 1, 1, nil},
		{"Einsum", 12, 2, 1, []*onnxpb.Attribute{idxStr("equation", "...ij,...jk")}},
		{"Slice", 13, 5, 1, nil},
		{"Split", 13, 2, 2, []*onnxpb.Attribute{idxInt("axis", -1)}},
		{"Tile", 13, 2, 1, nil},
		{"Expand", 13, 2, 1, nil},
		{"Range", 11, 3, 1, nil},
		{"Transpose", 13, 1, 1, []*onnxpb.Attribute{idxInts("perm", 1, 0)}},
		{"Concat", 13, 2, 1, []*onnxpb.Attribute{idxInt("axis", 1)}},
	}
	for _, c := range ops {
		ok := 0
		for trial := 0; trial < 150; trial++ {
			ins := make([]*tensor.Tensor, c.ins)
			for i := range ins {
				ins[i] = randTensor()
				if i > 0 && r.IntN(2) == 0 { // a small index list, as shapes and bounds are
					d := make([]int64, r.IntN(4))
					for j := range d {
						d[j] = int64(r.IntN(7) - 2)
					}
					ins[i] = idxI64s(d...)
				}
			}
			m, err := Load(idxModel(c.opset, c.op, c.attrs, ins, c.outs, tensor.Invalid))
			if err != nil {
				t.Fatalf("%s: load: %v", c.op, err)
			}
			feed := map[string]*tensor.Tensor{}
			for i, x := range ins {
				feed[fmt.Sprintf("x%d", i)] = x
			}
			_, err = m.Run(context.Background(), feed, nil)
			if err == nil {
				ok++
			}
			if err != nil && !errors.Is(err, ErrInput) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s on %v: an error that is not an input error: %v", c.op, idxShapes(ins), err)
			}
		}
		t.Logf("%s: %d of 150 random runs gave a value", c.op, ok)
	}
}

func idxShapes(ts []*tensor.Tensor) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.DType.String()+tensor.ShapeString(t.Shape))
	}
	return s
}

// TestEmptyTensorsWithHugeDimensions: a request may send a tensor with no
// elements whose other dimensions are each as large as the protocol
// allows ([2³¹, 0, 2³¹]); the operators answer at once, without walking
// or allocating by those dimensions.
func TestEmptyTensorsWithHugeDimensions(t *testing.T) {
	huge := tensor.MaxElements
	x := tensor.From([]int{huge, 0, huge}, []float32{})
	none := []float32{}
	idxCheck(t, "Gather", idxRun1(t, 13, "Gather", []*onnxpb.Attribute{idxInt("axis", 2)}, x, idxI64s(5, 7)), []int{huge, 0, 2}, none)
	idxCheck(t, "CumSum", idxRun1(t, 14, "CumSum", nil, x, tensor.Scalar(int64(2))), []int{huge, 0, huge}, none)
	idxCheck(t, "Trilu", idxRun1(t, 14, "Trilu", nil, x), []int{huge, 0, huge}, none)
	idxCheck(t, "EyeLike", idxRun1(t, 22, "EyeLike", nil, tensor.From([]int{huge, 0}, none)), []int{huge, 0}, none)
	outs, err := idxRunOp(t, 11, "Unique", []*onnxpb.Attribute{idxInt("axis", 0)}, []*tensor.Tensor{tensor.From([]int{3, 0}, none)}, 4)
	if err != nil {
		t.Fatal(err)
	}
	idxCheck(t, "Unique of empty slices", outs[0], []int{1, 0}, none)
	idxCheck(t, "their counts", outs[3], []int{1}, []int64{3})
	idxCheck(t, "their inverse", outs[2], []int{3}, []int64{0, 0, 0})
}
