package tensor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

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
		MoverOf(tensor.Float32).Strided(gotF, f, shape, strides, base)
		if want := stridedByElement(f, shape, strides, base); !slices.Equal(gotF, want) {
			t.Fatalf("view %v strides %v base %d of %v: %v, want %v", shape, strides, base, src, gotF, want)
		}
		gotS := make([]string, m)
		MoverOf(tensor.String).Strided(gotS, s, shape, strides, base)
		if want := stridedByElement(s, shape, strides, base); !slices.Equal(gotS, want) {
			t.Fatalf("strings: %v, want %v", gotS, want)
		}
		gotH := make([]tensor.F16, m)
		MoverOf(tensor.Float16).Strided(gotH, h, shape, strides, base)
		if want := stridedByElement(h, shape, strides, base); !slices.Equal(gotH, want) {
			t.Fatalf("FP16: %v, want %v", gotH, want)
		}
	}
}

// TestLongRunsInPieces: runs longer than ops.TickEvery (one run of a
// contiguous copy, a broadcast, a reversed axis) are copied in pieces
// that join up exactly.
func TestLongRunsInPieces(t *testing.T) {
	n := 2*ops.TickEvery + 7
	f := make([]float32, n)
	for i := range f {
		f[i] = float32(i)
	}
	for _, v := range []struct {
		shape, strides []int
		base           int
	}{
		{[]int{n}, []int{1}, 0},
		{[]int{3, n}, []int{0, 1}, 0},
		{[]int{n, 2}, []int{-1, 0}, n - 1},
		{[]int{2, n / 2}, []int{n / 2, 1}, 0},
	} {
		m, _ := tensor.NumElements(v.shape)
		got := make([]float32, m)
		MoverOf(tensor.Float32).Strided(got, f, v.shape, v.strides, v.base)
		if want := stridedByElement(f, v.shape, v.strides, v.base); !slices.Equal(got, want) {
			t.Errorf("view %v strides %v: the pieces differ from the element walk", v.shape, v.strides)
		}
	}
}

// TestLongMovesStopWithTheRequest: a copy of more than ops.TickEvery
// elements under a request that has ended stops with its error.
func TestLongMovesStopWithTheRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := opstest.Seq(4, ops.TickEvery)
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.Attribute
		in    []*tensor.Tensor
	}{
		{"Transpose", nil, []*tensor.Tensor{x}},
		{"Concat", []*onnxpb.Attribute{opstest.AttrInt("axis", 0)}, []*tensor.Tensor{x, x}},
		{"Slice", nil, []*tensor.Tensor{x, opstest.I64s(-1), opstest.I64s(0), opstest.I64s(0), opstest.I64s(-1)}},
		{"Tile", nil, []*tensor.Tensor{x, opstest.I64s(2, 1)}},
		{"Expand", nil, []*tensor.Tensor{x, opstest.I64s(2, 4, 1)}},
		{"Split", []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}, []*tensor.Tensor{x}},
		{"Range", nil, []*tensor.Tensor{tensor.Scalar(int64(0)), tensor.Scalar(int64(4 * ops.TickEvery)), tensor.Scalar(int64(1))}},
		{"Range", nil, []*tensor.Tensor{tensor.Scalar(float32(0)), tensor.Scalar(float32(4 * ops.TickEvery)), tensor.Scalar(float32(1))}},
		{"Range", nil, []*tensor.Tensor{tensor.Scalar(tensor.F16From(0)), tensor.Scalar(tensor.F16From(60000)), tensor.Scalar(tensor.F16From(0.0625))}},
	} {
		op, _, err := opstest.Compile(opstest.Node{Op: c.op, Opset: 21, Attrs: c.attrs}, len(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Run(ops.NewContext(ctx, nil, false), c.in); !errors.Is(err, context.Canceled) {
			t.Errorf("%s under an ended request: %v", c.op, err)
		}
		// The same node runs to the end under a live request.
		if _, err := op.Run(ops.NewContext(context.Background(), nil, false), c.in); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
	}
}
