package reduce

import (
	"context"
	"errors"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// TestWholeTensorLoopsStop: the loops over a reduction's whole input or
// output (the integer reductions computed in float64, a reduction of no
// axes, the BOOL extremes) stop with the request's error once it is
// cancelled, and answer under a live request.
func TestWholeTensorLoopsStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := ops.NewContext(ctx, nil, false)
	n := ops.TickEvery + 1
	xi := tensor.From([]int{n}, make([]int32, n))
	xf := tensor.From([]int{n}, make([]float64, n))
	xb := tensor.From([]int{n}, make([]bool, n))
	for _, tc := range []struct {
		kind reduceKind
		x    *tensor.Tensor
		red  []bool
	}{
		{reduceL2, xi, []bool{true}},
		{reduceLogSumExp, xi, []bool{false}},
		{reduceMean, xi, []bool{false}},
		{reduceProd, xi, []bool{false}},
		{reduceMax, xi, []bool{false}},
		{reduceMin, xb, []bool{false}},
		{reduceMean, xf, []bool{false}},
		{reduceLogSum, xf, []bool{false}},
		{reduceMax, xf, []bool{false}},
		{reduceProd, xf, []bool{false}},
	} {
		if _, err := reduceTensor(c, "op", tc.kind, tc.x, tc.red, true); !errors.Is(err, context.Canceled) {
			t.Errorf("%s of %v over %v: %v, want the context's error", kindName(tc.kind), tc.x.DType, tc.red, err)
		}
		if _, err := reduceTensor(ops.NewContext(context.Background(), nil, false), "op", tc.kind, tc.x, tc.red, true); err != nil {
			t.Errorf("%s of %v over %v: %v", kindName(tc.kind), tc.x.DType, tc.red, err)
		}
	}
}
