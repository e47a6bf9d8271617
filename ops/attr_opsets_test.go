package ops

import (
	"strings"
	"testing"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

// TestCheckAttrOpsets: an attribute outside its opsets is refused with
// the opset that defines or removed it; an absent one is never checked.
func TestCheckAttrOpsets(t *testing.T) {
	attrs := []OpsetAttr{{Name: "spatial", Since: 7, Until: 8}, {Name: "training_mode", Since: 14}}
	for _, c := range []struct {
		opset int64
		attr  string
		want  string
	}{
		{8, "spatial", ""},
		{9, "spatial", `"spatial" was removed after opset 8`},
		{13, "training_mode", `"training_mode" is defined from opset 14, the model imports opset 13`},
		{21, "training_mode", ""},
		{3, "epsilon", ""},
	} {
		n := &Node{Opset: c.opset, Attrs: map[string]*onnxpb.Attribute{c.attr: {Name: c.attr, Type: onnxpb.AttrInt}}}
		err := n.CheckAttrOpsets(attrs...)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("opset %d %s: %v, want %q", c.opset, c.attr, err, c.want)
		}
	}
}
