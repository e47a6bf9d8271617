package opstest

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// SplitRun runs op on in on a one-thread engine and on a two-thread one
// whose probe must see the loop split, and fails unless both give the
// same bits in every output.
func SplitRun(t testing.TB, what string, op ops.Operator, in ...*tensor.Tensor) {
	t.Helper()
	one, two := gemm.New(dispatch.Default(), 1), gemm.New(dispatch.Default(), 2)
	defer one.Close()
	defer two.Close()
	want, err := op.Run(ops.NewContext(context.Background(), one, false), in)
	if err != nil {
		t.Fatalf("%s on one thread: %v", what, err)
	}
	var probe gemm.Probe
	got, err := op.Run(ops.NewContext(context.Background(), two.Probed(&probe), false), in)
	if err != nil {
		t.Fatalf("%s on two threads: %v", what, err)
	}
	if !probe.Take() {
		t.Errorf("%s: the two-thread run gave its engine no loop that splits", what)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs on two threads, %d on one", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Shape, want[i].Shape) || !SameBits(got[i].Data, want[i].Data) {
			t.Errorf("%s: output %d differs between two threads and one", what, i)
		}
	}
}

// SameBits reports whether a and b hold the same bits (NaNs included).
func SameBits(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		b := b.([]float32)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return true
	case []float64:
		b := b.([]float64)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
