package text

import (
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func TestRegexFullMatchBadPattern(t *testing.T) {
	_, err := opstest.Run(t, opstest.Node{Op: "RegexFullMatch", Opset: 20,
		Attrs: []*onnxpb.Attribute{{Name: "pattern", Type: onnxpb.AttrString, S: []byte("a(")}}}, tensor.From([]int{1}, []string{"a"}))
	if err == nil {
		t.Error("an invalid pattern compiled")
	}
}
