package spatial

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
)

// Upsample is Resize's older form: scales of at least 1, asymmetric
// coordinates, nearest or linear. Its scales are an attribute at opsets
// 7–8 and an input at 9 (built as Resize 10 is).
// Upsample is the Upsample operator, by opset range.
var Upsample = ops.Op{
	ops.Register(ops.Descriptor{Type: "Upsample", Since: 7, Until: 8, Fold: true}, buildUpsample7),
	ops.Register(ops.Descriptor{Type: "Upsample", Since: 9, Until: 9, Fold: true}, buildResize10),
}

// UpsampleAttrs are Upsample's attributes at opsets 7–8 (scales are an
// attribute).
type UpsampleAttrs struct {
	Mode   string    `onnx:"mode" default:"nearest"`
	Scales []float32 `onnx:"scales"`
}

func buildUpsample7(n *ops.Node, at *UpsampleAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	c, err := resizeConfigOf("Upsample", at, n.Opset)
	if err != nil {
		return nil, err
	}
	for _, s := range at.Scales {
		if !(s >= 1) {
			return nil, fmt.Errorf("Upsample scale %v is below 1", s)
		}
	}
	return c, nil
}
