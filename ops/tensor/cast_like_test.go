package tensor

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// CastLike takes the second input's type, strings included.
func TestCastLike(t *testing.T) {
	out, err := opstest.Run(t, opstest.Node{Op: "CastLike", Opset: 21}, tensor.From([]int{2}, []int32{5, -6}), tensor.Scalar("x"))
	if err != nil || !slices.Equal(out[0].Data.([]string), []string{"5", "-6"}) {
		t.Errorf("CastLike to STRING = %v, %v", out, err)
	}
}
