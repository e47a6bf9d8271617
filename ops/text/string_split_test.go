package text

import (
	"slices"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestStringSplitWhitespace(t *testing.T) {
	x := tensor.From([]int{2}, []string{"  a  b\tc ", "one"})
	out, err := opstest.Run(t, opstest.Node{Op: "StringSplit", Opset: 20, Outputs: 2,
		Attrs: []*onnxpb.Attribute{{Name: "maxsplit", Type: onnxpb.AttrInt, I: 1}}}, x)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Data.([]string); !slices.Equal(got, []string{"a", "b\tc", "one", ""}) || !slices.Equal(out[0].Shape, []int{2, 2}) {
		t.Errorf("Y = %q %v", got, out[0].Shape)
	}
	if got := out[1].Data.([]int64); !slices.Equal(got, []int64{2, 1}) {
		t.Errorf("Z = %v", got)
	}
}
