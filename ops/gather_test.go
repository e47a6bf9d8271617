package ops

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

func TestGather(t *testing.T) {
	idx := []int{2, 0, 2}
	if got := Gather([]string{"a", "b", "c"}, idx).([]string); !slices.Equal(got, []string{"c", "a", "c"}) {
		t.Errorf("strings: %q", got)
	}
	h := tensor.Float32ToHalf[tensor.F16]([]float32{1, 2, 3})
	if got := Gather(h, idx).([]tensor.F16); !slices.Equal(got, []tensor.F16{h[2], h[0], h[2]}) {
		t.Errorf("FP16: %v", got)
	}
	if got := Gather([]int64{7}, nil).([]int64); len(got) != 0 {
		t.Errorf("no indices: %v", got)
	}
	for dt := tensor.Bool; dt <= tensor.String; dt++ {
		d, err := tensor.MakeSlice(dt, 3)
		if err != nil {
			continue // a type with no slice of its own
		}
		if got := (&tensor.Tensor{Data: Gather(d, idx)}).Len(); got != len(idx) {
			t.Errorf("%v: %d elements", dt, got)
		}
	}
}
