package tensor

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

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
	x := opstest.Seq(2, 3, 4, 5)
	for _, p := range [][]int{{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3}} {
		got, err := Permute(nil, x, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := transposeByElement(x.Data.([]float32), x.Shape, p); !slices.Equal(got.Data.([]float32), want) {
			t.Fatalf("perm %v: %v, want %v", p, got.Data, want)
		}
	}
}

func TestTransposePerm(t *testing.T) {
	x := opstest.Seq(2, 3)
	opstest.Check(t, "Transpose [1 0]", opstest.Run1(t, opstest.Node{Op: "Transpose", Opset: 21, Attrs: []*onnxpb.Attribute{opstest.AttrInts("perm", 1, 0)}}, x), []int{3, 2}, []float32{0, 3, 1, 4, 2, 5})
	opstest.Check(t, "Transpose [0 1]", opstest.Run1(t, opstest.Node{Op: "Transpose", Opset: 21, Attrs: []*onnxpb.Attribute{opstest.AttrInts("perm", 0, 1)}}, x), []int{2, 3}, x.Data)
	opstest.WantInputError(t, opstest.Node{Op: "Transpose", Opset: 21, Attrs: []*onnxpb.Attribute{opstest.AttrInts("perm", 0)}}, "does not fit rank 2", x)
	opstest.WantInputError(t, opstest.Node{Op: "Transpose", Opset: 21, Attrs: []*onnxpb.Attribute{opstest.AttrInts("perm", 1, 1)}}, "not a permutation", x)
	opstest.WantInputError(t, opstest.Node{Op: "Transpose", Opset: 21, Attrs: []*onnxpb.Attribute{opstest.AttrInts("perm", 0, 2)}}, "not a permutation", x)
}

// BenchmarkTranspose moves attention heads, 1×128×4×64 → 1×4×128×64:
// runs of 64 copied whole against the element-by-element baseline.
func BenchmarkTranspose(b *testing.B) {
	x := opstest.Seq(1, 128, 4, 64)
	p := []int{0, 2, 1, 3}
	b.Run("runs", func(b *testing.B) {
		b.SetBytes(int64(4 * x.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Permute(nil, x, p); err != nil {
				b.Fatal(err)
			}
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
