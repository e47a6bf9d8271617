package tensor

// Strides returns the row-major element strides of shape.
func Strides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// Iter walks the positions of a shape in row-major order and keeps, for
// each of several operands, the element offset of the current position in
// that operand: the sum of index·stride over the dimensions. Operands may
// have any strides: 0 along a dimension they are broadcast along, negative
// to walk one backwards (from a base offset given by Start), larger than
// the shape for a view into a bigger tensor.
//
//	it := tensor.NewIter(out, tensor.BroadcastStrides(aShape, out), tensor.BroadcastStrides(bShape, out))
//	for i := 0; it.Next(); i++ {
//		r[i] = a[it.Off(0)] + b[it.Off(1)]
//	}
type Iter struct {
	shape   []int
	strides [][]int
	idx     []int
	offs    []int
	left    int // positions not yet visited
	started bool
}

// NewIter returns an iterator over shape with one operand per strides
// slice, each of len(shape). Offsets start at 0.
func NewIter(shape []int, strides ...[]int) *Iter {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &Iter{shape: shape, strides: strides, idx: make([]int, len(shape)), offs: make([]int, len(strides)), left: n}
}

// Start sets operand k's offset at the first position (call before the
// first Next).
func (it *Iter) Start(k, off int) *Iter {
	it.offs[k] = off
	return it
}

// Next moves to the next position (the first, on the first call) and
// reports whether there is one.
func (it *Iter) Next() bool {
	if it.left == 0 {
		return false
	}
	it.left--
	if !it.started {
		it.started = true
		return true
	}
	for d := len(it.shape) - 1; d >= 0; d-- {
		it.idx[d]++
		for k, st := range it.strides {
			it.offs[k] += st[d]
		}
		if it.idx[d] < it.shape[d] {
			return true
		}
		for k, st := range it.strides {
			it.offs[k] -= st[d] * it.shape[d]
		}
		it.idx[d] = 0
	}
	return true
}

// Off returns operand k's element offset at the current position.
func (it *Iter) Off(k int) int { return it.offs[k] }

// Index returns the current position's index (shared: do not modify).
func (it *Iter) Index() []int { return it.idx }

// Rows calls f once for each run along the last dimension of shape, in
// row-major order, with each operand's offset at the start of the run;
// within a run operand k advances by strides[k][rank-1]. A rank-0 shape is
// one run of one element. Empty shapes make no calls. offs is reused
// between calls.
func Rows(shape []int, strides [][]int, f func(offs []int)) {
	_ = RowsUntil(shape, strides, func(offs []int) error {
		f(offs)
		return nil
	})
}

// RowsUntil is Rows for a walk that may stop: it returns the first error
// f returns, making no further calls.
func RowsUntil(shape []int, strides [][]int, f func(offs []int) error) error {
	rank := len(shape)
	offs := make([]int, len(strides))
	if rank == 0 {
		return f(offs)
	}
	for _, d := range shape {
		if d == 0 {
			return nil
		}
	}
	outer := NewIter(shape[:rank-1], trimLast(strides)...)
	for outer.Next() {
		copy(offs, outer.offs)
		if err := f(offs); err != nil {
			return err
		}
	}
	return nil
}

func trimLast(strides [][]int) [][]int {
	out := make([][]int, len(strides))
	for k, st := range strides {
		out[k] = st[:len(st)-1]
	}
	return out
}
