package tensor

import (
	"testing"

	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

func TestConcat(t *testing.T) {
	a, b := seq(2, 1), seq(2, 2)
	axis := func(v int64) []*onnxpb.Attribute { return []*onnxpb.Attribute{intAttr("axis", v)} }
	check(t, "Concat axis -1", run1(t, "Concat", 13, axis(-1), a, b, a), []int{2, 4}, []float32{0, 0, 1, 0, 1, 2, 3, 1})
	check(t, "Concat of one", run1(t, "Concat", 13, axis(0), b), []int{2, 2}, b.Data)
	check(t, "Concat of an empty input", run1(t, "Concat", 13, axis(0), seq(0, 2), b), []int{2, 2}, b.Data)
	wantInputError(t, "Concat", 13, axis(0), 1, []*tensor.Tensor{a, b}, "differ off axis 0")
	wantInputError(t, "Concat", 13, axis(1), 1, []*tensor.Tensor{a, seq(2)}, "differ in type or rank")
	wantInputError(t, "Concat", 13, axis(1), 1, []*tensor.Tensor{a, i64s(1, 2)}, "differ in type or rank")
	wantInputError(t, "Concat", 13, axis(2), 1, []*tensor.Tensor{a, a}, "out of range")
	if _, err := run(t, "Concat", 13, nil, a, a); err == nil {
		t.Error("Concat without axis compiled")
	}
}
