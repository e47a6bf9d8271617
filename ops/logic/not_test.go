package logic

import (
	"errors"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestNot(t *testing.T) {
	a := tensor.From([]int{2, 2}, []bool{true, true, false, false})
	out, err := opstest.Run(t, opstest.Node{Op: "Not", Opset: 1}, a)
	if err != nil || !slices.Equal(out[0].Data.([]bool), []bool{false, false, true, true}) || !slices.Equal(out[0].Shape, []int{2, 2}) {
		t.Errorf("Not = %v, %v", out, err)
	}
	if _, err := opstest.Run(t, opstest.Node{Op: "Not", Opset: 1}, tensor.Scalar(float32(1))); !errors.Is(err, ops.ErrInput) {
		t.Errorf("Not on FP32: %v", err)
	}
}
