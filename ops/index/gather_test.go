package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/ops"
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
	x := seq(3, 4, 5)
	for a := 0; a < 3; a++ {
		idx := make([]int64, 7)
		for i := range idx {
			idx[i] = int64(r.IntN(2*x.Shape[a]) - x.Shape[a])
		}
		y := run1(t, 13, "Gather", []*onnxpb.Attribute{intAttr("axis", int64(a))}, x, i64s(idx...))
		shape := slices.Clone(x.Shape)
		shape[a] = 7
		check(t, fmt.Sprintf("Gather axis %d", a), y, shape, gatherByElement(x, idx, a))
	}
	// scalar INT32 indices drop the axis
	y := run1(t, 13, "Gather", []*onnxpb.Attribute{intAttr("axis", 1)}, x, tensor.Scalar(int32(-1)))
	check(t, "Gather scalar index", y, []int{3, 5}, gatherByElement(x, []int64{3}, 1))
	// strings, and an empty table with no indices
	s := tensor.From([]int{3}, []string{"a", "b", "c"})
	check(t, "Gather strings", run1(t, 13, "Gather", nil, s, i64s(2, 0, 2)), []int{3}, []string{"c", "a", "c"})
	check(t, "Gather empty", run1(t, 13, "Gather", nil, seq(0, 4), tensor.From([]int{0}, []int64{})), []int{0, 4}, []float32{})
	for _, c := range []struct {
		ins  []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x, i64s(0, 3)}, "index 3 is out of range"},
		{[]*tensor.Tensor{x, i64s(-4)}, "index -4 is out of range"},
		{[]*tensor.Tensor{seq(0, 4), i64s(0)}, "out of range for an axis of 0"},
		{[]*tensor.Tensor{x, tensor.From([]int{1}, []float32{0})}, "INT32 or INT64"},
		{[]*tensor.Tensor{seq(1, 1<<20), tensor.From([]int{1 << 12}, make([]int64, 1<<12))}, "too many elements"},
	} {
		wantInputError(t, 13, "Gather", nil, c.ins, 1, c.want)
	}
}

func TestGatherElementsAndND(t *testing.T) {
	x := seq(2, 3)
	ind := tensor.From([]int{2, 2}, []int64{2, -3, 1, 0})
	check(t, "GatherElements", run1(t, 13, "GatherElements", []*onnxpb.Attribute{intAttr("axis", 1)}, x, ind), []int{2, 2}, []float32{2, 0, 4, 3})
	wantInputError(t, 13, "GatherElements", []*onnxpb.Attribute{intAttr("axis", 1)}, []*tensor.Tensor{x, tensor.From([]int{2, 1}, []int64{0, 3})}, 1, "out of range")
	wantInputError(t, 13, "GatherElements", nil, []*tensor.Tensor{x, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0})}, 1, "do not fit")
	wantInputError(t, 13, "GatherElements", nil, []*tensor.Tensor{x, i64s(0)}, 1, "rank 1, data rank 2")

	d := seq(2, 2, 2)
	check(t, "GatherND", run1(t, 13, "GatherND", nil, d, tensor.From([]int{2, 2}, []int64{1, 0, -1, 1})), []int{2, 2}, []float32{4, 5, 6, 7})
	check(t, "GatherND batch_dims", run1(t, 13, "GatherND", []*onnxpb.Attribute{intAttr("batch_dims", 1)}, d, tensor.From([]int{2, 1, 2}, []int64{1, 1, 0, 0})), []int{2, 1}, []float32{3, 4})
	wantInputError(t, 13, "GatherND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 4}, []int64{0, 0, 0, 0})}, 1, "address 4 dimensions of 3")
	wantInputError(t, 13, "GatherND", nil, []*tensor.Tensor{d, tensor.From([]int{1, 1}, []int64{2})}, 1, "out of range")
	wantInputError(t, 13, "GatherND", []*onnxpb.Attribute{intAttr("batch_dims", 1)}, []*tensor.Tensor{d, tensor.From([]int{3, 1}, []int64{0, 0, 0})}, 1, "batch dimensions differ")
	wantInputError(t, 13, "GatherND", []*onnxpb.Attribute{intAttr("batch_dims", 3)}, []*tensor.Tensor{d, i64s(0)}, 1, "batch_dims 3")
}

// BenchmarkGather looks up 128 token ids in a 30522×256 embedding table:
// rows copied whole against element-by-element indexing.
func BenchmarkGather(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	table := seq(30522, 256)
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
			if _, err := gatherAxis(&meter{c: c}, table, indices, 0); err != nil {
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
