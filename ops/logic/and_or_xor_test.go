package logic

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestAndOrXor(t *testing.T) {
	a := tensor.From([]int{2, 2}, []bool{true, true, false, false})
	b := tensor.From([]int{2}, []bool{true, false})
	for op, want := range map[string][]bool{
		"And": {true, false, false, false}, "Or": {true, true, true, false}, "Xor": {false, true, true, false},
	} {
		out, err := opstest.Run(t, opstest.Node{Op: op, Opset: 7}, a, b)
		if err != nil || !slices.Equal(out[0].Data.([]bool), want) || !slices.Equal(out[0].Shape, []int{2, 2}) {
			t.Errorf("%s = %v, %v; want %v", op, out, err, want)
		}
		if _, err := opstest.Run(t, opstest.Node{Op: op, Opset: 7}, a, tensor.From([]int{2}, []int32{1, 0})); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s on INT32: %v", op, err)
		}
		if _, err := opstest.Run(t, opstest.Node{Op: op, Opset: 7}, a, tensor.From([]int{3}, []bool{true, false, true})); !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s on shapes that do not broadcast: %v", op, err)
		}
	}
}
