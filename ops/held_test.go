package ops

import (
	"slices"
	"testing"
)

type holder struct{ held []int }

func (h *holder) HoldInputs(i ...int) { h.held = append(h.held, i...) }

// TestHoldInputs: the inputs an operator holds reach a compiler that
// listens, and a node without one ignores them.
func TestHoldInputs(t *testing.T) {
	h := &holder{}
	(&Node{Host: h}).HoldInputs(1, 3)
	if !slices.Equal(h.held, []int{1, 3}) {
		t.Errorf("held %v, want [1 3]", h.held)
	}
	(&Node{}).HoldInputs(0) // no compiler: nothing to tell
}
