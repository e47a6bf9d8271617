package norm

import (
	"errors"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestNormHugeEmptyInputs: a tensor with a zero dimension may declare any
// other dimension; normalizing it must neither allocate for nor loop over
// those dimensions.
func TestNormHugeEmptyInputs(t *testing.T) {
	huge := func(shape ...int) *tensor.Tensor {
		return &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: []float32{}}
	}
	for _, c := range []struct {
		op    string
		x     *tensor.Tensor
		attrs []*onnxpb.Attribute
	}{
		{"LRN", huge(1<<40, 1<<40, 0), []*onnxpb.Attribute{opstest.AttrInt("size", 3)}},
		{"LpNormalization", huge(1<<40, 0, 1<<40), []*onnxpb.Attribute{opstest.AttrInt("axis", 1)}},
		{"MeanVarianceNormalization", huge(0, 1<<40), []*onnxpb.Attribute{opstest.AttrInts("axes", 0)}},
	} {
		_, err := run(t, 22, c.op, 1, []*tensor.Tensor{c.x}, c.attrs...)
		if err != nil && !errors.Is(err, ops.ErrInput) {
			t.Errorf("%s %v: %v", c.op, c.x.Shape, err)
		}
	}
	p := tensor.From([]int{3}, []float32{1, 1, 1})
	for _, op := range []string{"InstanceNormalization", "GroupNormalization"} {
		var attrs []*onnxpb.Attribute
		if op == "GroupNormalization" {
			attrs = append(attrs, opstest.AttrInt("num_groups", 1))
		}
		if _, err := run(t, 22, op, 1, []*tensor.Tensor{huge(1<<40, 3, 0), p, p}, attrs...); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
	one, zero := tensor.From([]int{1}, []float32{1}), tensor.From([]int{1}, []float32{0})
	if _, err := run(t, 15, "BatchNormalization", 3, []*tensor.Tensor{huge(1<<40, 1, 0), one, zero, zero, one}, opstest.AttrInt("training_mode", 1)); err != nil {
		t.Errorf("BatchNormalization training: %v", err)
	}
}
