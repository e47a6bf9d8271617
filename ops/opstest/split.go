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

// SplitRun runs op on in on a one-thread engine and on a two-thread one,
// whose probes must each see a loop that splits, and fails unless both
// give the same bits in every output. It returns the two-thread run's
// outputs.
func SplitRun(t testing.TB, what string, op ops.Operator, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	return ThreadsAgree(t, what, true, op, in...)
}

// ThreadsAgree is SplitRun for an operator whose loops split only when
// split says so: it fails unless one thread and two give the same bits
// in every output, and, with split, unless each run's probe saw a loop
// that splits.
func ThreadsAgree(t testing.TB, what string, split bool, op ops.Operator, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	one, two := gemm.New(dispatch.Default(), 1), gemm.New(dispatch.Default(), 2)
	defer one.Close()
	defer two.Close()
	var outs [2][]*tensor.Tensor
	for i, e := range []*gemm.Engine{one, two} {
		var probe gemm.Probe
		got, err := op.Run(ops.NewContext(context.Background(), e.Probed(&probe), false), in)
		if err != nil {
			t.Fatalf("%s on %d thread(s): %v", what, e.Threads(), err)
		}
		if split && !probe.Take() {
			t.Errorf("%s: the %d-thread run gave its engine no loop that splits", what, e.Threads())
		}
		outs[i] = got
	}
	want, got := outs[0], outs[1]
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs on two threads, %d on one", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Shape, want[i].Shape) || !SameBits(got[i].Data, want[i].Data) {
			t.Errorf("%s: output %d differs between two threads and one", what, i)
		}
	}
	return got
}

// Func is an operator that runs a function of the Context and the
// inputs: a family's own routine under SplitRun, say.
type Func func(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Run calls f.
func (f Func) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) { return f(c, in) }

// SameBits reports whether a and b hold the same bits (NaNs included).
func SameBits(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		b, ok := b.([]float32)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return true
	case []float64:
		b, ok := b.([]float64)
		if !ok || len(a) != len(b) {
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
