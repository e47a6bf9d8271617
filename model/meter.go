package model

import (
	"context"
	"reflect"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Budget is the memory a run may hold for the values its nodes make (see
// ops.Budget); WithBudget puts one in a run's context.
type Budget = ops.Budget

// MemoryError is a node's need for memory its run's budget refused; the
// NodeError around it names the node.
type MemoryError = ops.MemoryError

// WithBudget returns ctx with b: Run under it charges every value a node
// makes to b before or as it is made, gives each back once no later node
// reads it, and gives back the rest when it returns. A node whose outputs
// b refuses fails with a NodeError wrapping a *MemoryError wrapping b's
// error; an operator whose outputs' size follows from its inputs asks
// before it allocates them.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return ops.WithBudget(ctx, b)
}

// FreshBytes returns the bytes of memory a run's outputs hold that its
// inputs do not: what the caller holds beyond its inputs while it keeps
// the outputs.
func FreshBytes(outputs, inputs map[string]*tensor.Tensor) int64 {
	in := make([]*tensor.Tensor, 0, len(inputs))
	for _, t := range inputs {
		in = append(in, t)
	}
	outs := make([]*tensor.Tensor, 0, len(outputs))
	for _, t := range outputs {
		outs = append(outs, t)
	}
	var n int64
	for j := range outs {
		n += freshBytes(outs, j, in)
	}
	return n
}

// BudgetOf returns the budget runs under ctx charge, nil for none.
func BudgetOf(ctx context.Context) Budget { return ops.BudgetOf(ctx) }

// freshBytes returns the bytes of memory outs[j] holds that none of in
// and no earlier output holds: an output that is an input, or a view of
// one (Reshape, Identity, a slice), costs nothing.
func freshBytes(outs []*tensor.Tensor, j int, in []*tensor.Tensor) int64 {
	t := outs[j]
	if t == nil || t.Len() == 0 || sharesMemory(t, in) || sharesMemory(t, outs[:j]) {
		return 0
	}
	return ops.SizeOf(t)
}

// sharesMemory reports whether t's elements lie within the memory of one
// of ts.
func sharesMemory(t *tensor.Tensor, ts []*tensor.Tensor) bool {
	lo, hi := span(t.Data, false)
	if lo == 0 {
		return false
	}
	for _, u := range ts {
		if u == nil {
			continue
		}
		if u == t {
			return true
		}
		ulo, uhi := span(u.Data, true)
		if ulo != 0 && lo >= ulo && hi <= uhi {
			return true
		}
	}
	return false
}

// span returns the address range of a slice's elements: its length, or
// with whole its capacity; 0, 0 for an empty or unknown one.
func span(data any, whole bool) (lo, hi uintptr) {
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Slice || v.Cap() == 0 {
		return 0, 0
	}
	n := v.Len()
	if whole {
		n = v.Cap()
	}
	lo = v.Pointer()
	return lo, lo + uintptr(n)*v.Type().Elem().Size()
}
