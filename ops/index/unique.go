package index

import (
	"cmp"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Unique", Since: 11, Fold: true}, buildUnique)
}

// UniqueAttrs are Unique's attributes.
type UniqueAttrs struct {
	Axis   *int64 `onnx:"axis"` // nil: unique elements of the flattened input
	Sorted bool   `onnx:"sorted" default:"true"`
}

// unique is a compiled Unique: the axis whose slices it compares (nil:
// the flattened elements) and whether its outputs are sorted.
type unique struct {
	axis   *int64
	sorted bool
}

func buildUnique(n *ops.Node, at *UniqueAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 4); err != nil {
		return nil, err
	}
	var axis *int64
	if at.Axis != nil {
		a := *at.Axis
		axis = &a
	}
	return unique{axis: axis, sorted: at.Sorted}, nil
}

func (u unique) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return uniqueOf(c, in[0], u.axis, u.sorted)
}

// uniqueOf returns Unique's four outputs: the unique elements (or slices
// along axis) in ascending or first-occurrence order, the index of each
// one's first occurrence, each input entry's position among them, and
// their counts.
func uniqueOf(oc *ops.Context, x *tensor.Tensor, axis *int64, sorted bool) ([]*tensor.Tensor, error) {
	elem, err := compareOf(x)
	if err != nil {
		return nil, err
	}
	count, a := x.Len(), 0
	compare := elem
	if axis != nil {
		if a, err = ops.NormAxis(*axis, x.Rank()); err != nil {
			return nil, err
		}
		if count = x.Shape[a]; x.Len() == 0 && count > 0 {
			return uniqueOfEmptySlices(x, a)
		}
		outer, dim, inner := 0, 0, 0
		if count > 0 {
			outer, dim, inner = geometry(x.Shape, a)
		}
		compare = func(i, j int) int { // lexicographic over the slices
			for o := 0; o < outer; o++ {
				bi, bj := (o*dim+i)*inner, (o*dim+j)*inner
				for k := 0; k < inner; k++ {
					if c := elem(bi+k, bj+k); c != 0 {
						return c
					}
				}
			}
			return 0
		}
	}
	order := make([]int, count)
	cost := max(x.Len()/max(count, 1), 1) // the elements one comparison may read
	err = oc.InPieces(count, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			order[i] = i
		}
	})
	if err != nil {
		return nil, err
	}
	if err := sortStable(oc, order, cost, compare); err != nil {
		return nil, err
	}
	var first []int64 // first occurrence of each unique entry
	var counts []int64
	inverse := make([]int64, count)
	err = oc.InPieces(count, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e := order[i]
			if i == 0 || compare(order[i-1], e) != 0 {
				first = append(first, int64(e))
				counts = append(counts, 0)
			}
			inverse[e] = int64(len(first) - 1)
			counts[len(counts)-1]++
		}
	})
	if err != nil {
		return nil, err
	}
	if !sorted { // renumber in order of first occurrence
		rank := make([]int, len(first))
		for i := range rank {
			rank[i] = i // no more entries than the counted walk above
		}
		if err := sortStable(oc, rank, 1, func(i, j int) int { return cmp.Compare(first[i], first[j]) }); err != nil {
			return nil, err
		}
		newID := make([]int64, len(first))
		f2, c2 := make([]int64, len(first)), make([]int64, len(first))
		for to, from := range rank {
			newID[from] = int64(to)
			f2[to], c2[to] = first[from], counts[from]
		}
		first, counts = f2, c2
		err = oc.InPieces(len(inverse), func(lo, hi int) {
			for i, g := range inverse[lo:hi] {
				inverse[lo+i] = newID[g]
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if first == nil {
		first, counts = []int64{}, []int64{}
	}
	u := len(first)
	idx := tensor.From([]int{u}, first)
	var y *tensor.Tensor
	if axis == nil {
		offs := make([]int, u)
		for i, f := range first {
			offs[i] = int(f)
		}
		mv := tensorops.MoverOf(x.DType)
		y = &tensor.Tensor{DType: x.DType, Shape: []int{u}, Data: mv.Alloc(u)}
		if err := runs(oc, mv, y.Data, 0, x.Data, 0, offs, 1); err != nil {
			return nil, err
		}
	} else if y, err = gatherAxis(oc, x, idx, int64(a)); err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, tensor.From([]int{u}, first), tensor.From([]int{count}, inverse), tensor.From([]int{u}, counts)}, nil
}

// uniqueOfEmptySlices is Unique along axis a of an empty x with count >
// 0 slices: all are equal (and empty), so the first is the only one.
func uniqueOfEmptySlices(x *tensor.Tensor, a int) ([]*tensor.Tensor, error) {
	count := x.Shape[a]
	shape := slices.Clone(x.Shape)
	shape[a] = 1
	y, _, err := NewTensor(nil, x.DType, shape)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y, oneInt64(0), tensor.From([]int{count}, make([]int64, count)), oneInt64(int64(count))}, nil
}

func oneInt64(v int64) *tensor.Tensor { return tensor.From([]int{1}, []int64{v}) }
