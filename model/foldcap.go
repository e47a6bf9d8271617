package model

import (
	"errors"

	"github.com/quantserve/quantserve/tensor"
)

// DefaultMaxFoldBytes is the largest output, in bytes, a node folded at
// load may produce when Options.MaxFoldBytes is 0.
const DefaultMaxFoldBytes = 256 << 20

// foldCap returns the cap on a folded node's output bytes.
func (o *Options) foldCap() int64 {
	if o.MaxFoldBytes > 0 {
		return o.MaxFoldBytes
	}
	return DefaultMaxFoldBytes
}

// foldBudget is the budget of one node folded at load: an operator
// whose output size follows from its input values asks it before
// allocating (ops.Context.Reserve), so a node that would pass the cap
// fails with errFoldTooLarge having allocated nothing. Others are
// measured once folded (outputBytes).
type foldBudget struct {
	limit, used int64
}

// errFoldTooLarge is a folded node's reservation past the cap.
var errFoldTooLarge = errors.New("the folded output would pass the cap")

func (b *foldBudget) Grow(n int64) error {
	if b.used+n > b.limit {
		return errFoldTooLarge
	}
	b.used += n
	return nil
}

func (b *foldBudget) Shrink(n int64) { b.used -= min(n, b.used) }

// outputBytes is the memory a node's outputs hold.
func outputBytes(outs []*tensor.Tensor) int64 {
	var n int64
	for _, t := range outs {
		if t != nil {
			n += int64(t.Len()) * int64(max(t.DType.Size(), 1))
		}
	}
	return n
}
