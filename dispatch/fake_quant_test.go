package dispatch

import "testing"

// TestFakeQuantKernels: every table with vector kernels gives a pair all
// four; the pure-Go table none (the pair's scalar loop is faster).
func TestFakeQuantKernels(t *testing.T) {
	for _, tb := range Available() {
		k := tb.FakeQuantKernels()
		all := k.MinMax != nil && k.Hard != nil && k.Finish != nil && k.Scale != nil
		none := k.MinMax == nil && k.Hard == nil && k.Finish == nil && k.Scale == nil
		if tb == generic && !none || tb != generic && !all {
			t.Errorf("%s: kernels %+v", tb.Name, k)
		}
	}
}
