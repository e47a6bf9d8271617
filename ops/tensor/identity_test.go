package tensor

import (
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestIdentityEveryType passes each element type through Identity.
func TestIdentityEveryType(t *testing.T) {
	for dt := tensor.Bool; dt <= tensor.String; dt++ {
		x, err := tensor.New(dt, []int{2, 0, 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []*tensor.Tensor{x, tensor.From([]int{1}, []string{"s"})} {
			if in.DType != dt && in.DType == tensor.String {
				continue
			}
			out, err := opstest.Run(t, opstest.Node{Op: "Identity", Opset: 21}, in)
			if err != nil || out[0] != in {
				t.Errorf("Identity on %v: %v, %v", dt, out, err)
			}
		}
	}
}
