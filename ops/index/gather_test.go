package index

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// gatherByElement is Gather element by element (an index per element):
// the reference and the benchmark baseline of gatherAxis's row copies.
func gatherByElement(x *tensor.Tensor, idx []int64, a int) []float32 {
	outer, dim, inner := geometry(x.Shape, a)
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
	x := opstest.Seq(3, 4, 5)
	for a := 0; a < 3; a++ {
		idx := make([]int64, 7)
		for i := range idx {
			idx[i] = int64(r.IntN(2*x.Shape[a]) - x.Shape[a])
		}
		y := opstest.Run1(t, opstest.Node{Op: "Gather", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", int64(a))}}, x, opstest.I64s(idx...))
		shape := slices.Clone(x.Shape)
		shape[a] = 7
		opstest.Check(t, fmt.Sprintf("Gather axis %d", a), y, shape, gatherByElement(x, idx, a))
	}
	// scalar INT32 indices drop the axis
	y := opstest.Run1(t, opstest.Node{Op: "Gather", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, x, tensor.Scalar(int32(-1)))
	opstest.Check(t, "Gather scalar index", y, []int{3, 5}, gatherByElement(x, []int64{3}, 1))
	// strings, and an empty table with no indices
	s := tensor.From([]int{3}, []string{"a", "b", "c"})
	opstest.Check(t, "Gather strings", opstest.Run1(t, opstest.Node{Op: "Gather", Opset: 13}, s, opstest.I64s(2, 0, 2)), []int{3}, []string{"c", "a", "c"})
	opstest.Check(t, "Gather empty", opstest.Run1(t, opstest.Node{Op: "Gather", Opset: 13}, opstest.Seq(0, 4), tensor.From([]int{0}, []int64{})), []int{0, 4}, []float32{})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, opstest.I64s(0, 3)}, "index 3 is out of range"},
		{[]*tensor.Tensor{x, opstest.I64s(-4)}, "index -4 is out of range"},
		{[]*tensor.Tensor{opstest.Seq(0, 4), opstest.I64s(0)}, "out of range for an axis of 0"},
		{[]*tensor.Tensor{x, tensor.From([]int{1}, []float32{0})}, "INT32 or INT64"},
		{[]*tensor.Tensor{opstest.Seq(1, 1<<20), tensor.From([]int{1 << 12}, make([]int64, 1<<12))}, "too many elements"},
	} {
		opstest.WantInputError(t, opstest.Node{Op: "Gather", Opset: 13}, c.want, c.ins...)
	}
}

func TestGatherElementsAndND(t *testing.T) {
	x := opstest.Seq(2, 3)
	ind := tensor.From([]int{2, 2}, []int64{2, -3, 1, 0})
	opstest.Check(t, "GatherElements", opstest.Run1(t, opstest.Node{Op: "GatherElements", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, x, ind), []int{2, 2}, []float32{2, 0, 4, 3})
	opstest.WantInputError(t, opstest.Node{Op: "GatherElements", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}}, "out of range", x, tensor.From([]int{2, 1}, []int64{0, 3}))
	opstest.WantInputError(t, opstest.Node{Op: "GatherElements", Opset: 13}, "do not fit", x, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0}))
	opstest.WantInputError(t, opstest.Node{Op: "GatherElements", Opset: 13}, "rank 1, data rank 2", x, opstest.I64s(0))

	d := opstest.Seq(2, 2, 2)
	opstest.Check(t, "GatherND", opstest.Run1(t, opstest.Node{Op: "GatherND", Opset: 13}, d, tensor.From([]int{2, 2}, []int64{1, 0, -1, 1})), []int{2, 2}, []float32{4, 5, 6, 7})
	opstest.Check(t, "GatherND batch_dims", opstest.Run1(t, opstest.Node{Op: "GatherND", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("batch_dims", 1)}}, d, tensor.From([]int{2, 1, 2}, []int64{1, 1, 0, 0})), []int{2, 1}, []float32{3, 4})
	opstest.WantInputError(t, opstest.Node{Op: "GatherND", Opset: 13}, "address 4 dimensions of 3", d, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0}))
	opstest.WantInputError(t, opstest.Node{Op: "GatherND", Opset: 13}, "out of range", d, tensor.From([]int{1, 1}, []int64{2}))
	opstest.WantInputError(t, opstest.Node{Op: "GatherND", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("batch_dims", 1)}}, "batch dimensions differ", d, tensor.From([]int{3, 1}, []int64{0, 0, 0}))
	opstest.WantInputError(t, opstest.Node{Op: "GatherND", Opset: 13, Attrs: []*onnxpb.Attribute{opstest.AttrInt("batch_dims", 3)}}, "batch_dims 3", d, opstest.I64s(0))
}

// BenchmarkGather looks up 128 token ids in a 30522×256 embedding table:
// rows copied whole against element-by-element indexing.
func BenchmarkGather(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	table := opstest.Seq(30522, 256)
	ids := make([]int64, 128)
	for i := range ids {
		ids[i] = int64(r.IntN(30522))
	}
	indices := tensor.From([]int{1, 128}, ids)
	c := ops.NewContext(context.Background(), nil, false)
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(128 * 256 * 4)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gatherAxis(c, table, indices, 0); err != nil {
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

// TestGatherRecycledOutput: a float32 Gather writes its output into a
// buffer its run recycled (an embedding's rows, a transformer's first
// step, are otherwise fresh memory every run) and writes every element
// of it: a buffer left full of NaNs gives the reference's values.
func TestGatherRecycledOutput(t *testing.T) {
	a := ops.NewArena()
	c := ops.NewContext(context.Background(), nil, false).WithArena(a)
	x := opstest.Seq(50, 64) // a table of 50 rows of 64
	idx := []int64{3, 49, 0, 3, -1, 17, 8, 8}
	old, err := c.NewFloat32([]int{len(idx), 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range old.Data.([]float32) {
		old.Data.([]float32)[i] = float32(math.NaN())
	}
	a.Hold(old)
	a.Drop(old)
	y, err := gatherAxis(c, x, opstest.I64s(idx...), 0)
	if err != nil {
		t.Fatal(err)
	}
	if &y.Data.([]float32)[0] != &old.Data.([]float32)[0] {
		t.Error("Gather's output is not the run's recycled buffer")
	}
	opstest.Check(t, "Gather into a recycled buffer", y, []int{len(idx), 64}, gatherByElement(x, idx, 0))
}
