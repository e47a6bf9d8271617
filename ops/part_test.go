package ops

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// TestPart: a part of a node has the node's name, engine and options,
// the inputs and QDQ weights given, one output, no attributes, and the
// compiler's record PartHost makes of it.
func TestPart(t *testing.T) {
	w := tensor.From([]int{1, 1}, []float32{2})
	q := &QDQWeight{Q: []int32{1}, Rows: 1, Cols: 1, Scales: []float32{2}, PerTensor: true}
	var seen *Node
	n := &Node{Name: "fused", Type: "Linear", Domain: "quantserve", Opset: 1, Quantize: true,
		PartHost: func(p *Node) any { seen = p; return "record" }}
	p := n.Part("MatMul", 20, []*tensor.Tensor{nil, w}, []*QDQWeight{nil, q})
	if p.Name != "fused" || p.Type != "MatMul" || p.Domain != "" || p.Opset != 20 || !p.Quantize || len(p.Attrs) != 0 {
		t.Errorf("part %+v", p)
	}
	if !slices.Equal(p.Inputs, []string{"fused:0", "fused:1"}) || len(p.Outputs) != 1 || p.Const(1) != w || p.QDQInput(1) != q || p.QDQInput(0) != nil {
		t.Errorf("inputs %v, outputs %v", p.Inputs, p.Outputs)
	}
	if seen != p || p.Host != "record" {
		t.Errorf("host %v", p.Host)
	}
	if p := (&Node{Name: "x"}).Part("Add", 13, make([]*tensor.Tensor, 2), nil); p.Host != nil || p.QDQInput(1) != nil {
		t.Errorf("without a compiler: host %v", p.Host)
	}
	if _, err := n.BuildPart("NoSuchOperator", 20, nil, nil); err == nil {
		t.Error("an unknown operator was built")
	}
}

// TestQDQWeightTranspose: the transpose of a QDQ weight is its values
// transposed, its scales along the other axis.
func TestQDQWeightTranspose(t *testing.T) {
	w := &QDQWeight{Q: []int32{1, 2, 3, 4, 5, 6}, Rows: 2, Cols: 3, Scales: []float32{1, 2}, Axis: 0}
	tw := w.Transpose()
	if tw.Rows != 3 || tw.Cols != 2 || tw.Axis != 1 || !slices.Equal(tw.Q, []int32{1, 4, 2, 5, 3, 6}) || !slices.Equal(tw.Scales, w.Scales) {
		t.Errorf("transpose %+v", tw)
	}
	if back := tw.Transpose(); back.Axis != 0 || !slices.Equal(back.Q, w.Q) {
		t.Errorf("twice %+v", back)
	}
}
