package conv

import (
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

// TestFusedConvResidualQDQNodes: a pair before the residual
// (residual_qdq_*) builds with a residual input, and is refused at load
// without one or with pairs FusedConv cannot apply.
func TestFusedConvResidualQDQNodes(t *testing.T) {
	w := tensor.From([]int{2, 3, 3, 3}, make([]float32, 54))
	pair := func(scales []float32, zps []int64, typ string) []*onnxpb.Attribute {
		return []*onnxpb.Attribute{opstest.AttrFloats("residual_qdq_scales", scales...), opstest.AttrInts("residual_qdq_zero_points", zps...),
			opstest.AttrString("residual_qdq_type", typ)}
	}
	absent := []int{FusedB, FusedBNScale, FusedBNBias, FusedBNMean, FusedBNVar}
	ok := spec{domain: ops.RewriteDomain, op: FusedConvType, opset: 1, attrs: pair([]float32{0.1, 0.1}, []int64{3, 3}, "uint8"),
		inputs: FusedResidual + 1, consts: []*tensor.Tensor{nil, w}, absent: absent}
	if _, err := compile(ok); err != nil {
		t.Fatalf("a residual pair with a residual: %v", err)
	}
	for _, c := range []struct {
		name   string
		attrs  []*onnxpb.Attribute
		inputs int
	}{
		{"no residual", pair([]float32{0.1, 0.1}, []int64{3, 3}, "uint8"), 2},
		{"one scale", pair([]float32{0.1}, []int64{3, 3}, "uint8"), FusedResidual + 1},
		{"type", pair([]float32{0.1, 0.1}, []int64{3, 3}, "int16"), FusedResidual + 1},
		{"zero point", pair([]float32{0.1, 0.1}, []int64{3, 300}, "uint8"), FusedResidual + 1},
	} {
		s := ok
		s.attrs, s.inputs = c.attrs, c.inputs
		if c.inputs == 2 {
			s.absent = nil
		}
		if _, err := compile(s); err == nil {
			t.Errorf("%s: built", c.name)
		}
	}
}
