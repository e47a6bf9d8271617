package elem

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Layout is the walk of an elementwise operation over operands that
// broadcast together (numpy rules). Dimensions of size 1 are dropped and
// neighbours that every operand steps through alike are merged, so that
// the common cases become few long runs: operands of one shape are one
// run; a scalar operand steps by 0 within a run; a per-channel [C,1,1]
// operand over NCHW gives C runs of H·W with that operand fixed within
// each; a last-axis vector gives runs in which both operands advance.
type Layout struct {
	shape []int    // the broadcast output shape
	n     int      // its element count
	dims  []int    // the merged dimensions walked
	st    [][]int  // strides over dims: the output's first, then each operand's
	st3   [3][]int // st's array for up to two operands
}

// NewLayout returns the walk over operands of the given shapes, or an
// input error when they do not broadcast together or their broadcast has
// too many elements.
func NewLayout(shapes ...[]int) (*Layout, error) {
	out, err := ops.BroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	n, err := tensor.NumElements(out)
	if err != nil {
		return nil, ops.InputErrorf("%v", err)
	}
	// One allocation holds every operand's strides over out (all), the
	// merged strides and the merged dimensions: a small operation's
	// layout costs a few allocations, not one per operand and dimension.
	r, k := len(out), len(shapes)+1
	buf := make([]int, 2*k*r+max(r, 1)+k)
	var all3 [3][]int
	all := all3[:0]
	if k > len(all3) {
		all = make([][]int, 0, k)
	}
	all = all[:k]
	all[0] = buf[:r]
	for i, s := r-1, 1; i >= 0; i-- {
		all[0][i] = s
		s *= out[i]
	}
	for j, sh := range shapes {
		st := buf[(j+1)*r : (j+2)*r]
		for i, s := r-1, 1; i >= 0; i-- {
			d := i - (r - len(sh))
			if d < 0 {
				continue
			}
			if sh[d] != 1 {
				st[i] = s
			}
			s *= sh[d]
		}
		all[j+1] = st
	}
	merged := buf[k*r : 2*k*r+k]
	l := &Layout{shape: out, n: n, dims: buf[2*k*r+k:][:0]}
	l.st = l.st3[:0]
	if k > len(l.st3) {
		l.st = make([][]int, 0, k)
	}
	l.st = l.st[:k]
	for j := range l.st {
		l.st[j] = merged[j*(r+1) : j*(r+1) : (j+1)*(r+1)]
	}
	for d, size := range out {
		if size == 1 {
			continue
		}
		if last := len(l.dims) - 1; last >= 0 && l.mergeable(all, last, d) {
			l.dims[last] *= size
			for j := range all {
				l.st[j][last] = all[j][d]
			}
			continue
		}
		l.dims = append(l.dims, size)
		for j := range all {
			l.st[j] = append(l.st[j], all[j][d])
		}
	}
	if len(l.dims) == 0 { // every dimension is 1: one run of one element
		l.dims = append(l.dims, 1)
		for j := range l.st {
			l.st[j] = append(l.st[j], 0)
		}
	}
	return l, nil
}

// mergeable reports whether out dimension d can join merged dimension
// last: every operand steps through the pair as through one dimension.
func (l *Layout) mergeable(all [][]int, last, d int) bool {
	for k := range all {
		if l.st[k][last] != all[k][d]*l.shapeAt(d) {
			return false
		}
	}
	return true
}

func (l *Layout) shapeAt(d int) int { return l.shape[d] }

// Shape returns the broadcast output shape (shared: do not modify).
func (l *Layout) Shape() []int { return l.shape }

// Len returns the output's element count.
func (l *Layout) Len() int { return l.n }

// Run returns the length of each run.
func (l *Layout) Run() int { return l.dims[len(l.dims)-1] }

// Inc returns how operand k (0 = the output, 1.. the operands in the
// order NewLayout took their shapes) advances within a run: 1, or 0 when
// it is broadcast.
func (l *Layout) Inc(k int) int { return l.st[k][len(l.dims)-1] }

// Each calls f at the start of every run with each operand's offset
// (offs[0] is the output's; offs is reused between calls).
func (l *Layout) Each(f func(offs []int)) { tensor.Rows(l.dims, l.st, f) }

// EachUntil is Each for a walk that may stop: it returns the first error
// f returns, making no further calls.
func (l *Layout) EachUntil(f func(offs []int) error) error { return tensor.RowsUntil(l.dims, l.st, f) }
