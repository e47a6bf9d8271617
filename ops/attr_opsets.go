package ops

import (
	"fmt"
)

// OpsetAttr names an attribute an operator has only in opsets
// [Since, Until] (Until 0: every later one).
type OpsetAttr struct {
	Name         string
	Since, Until int64
}

// CheckAttrOpsets refuses a node carrying an attribute its operator does
// not define at the node's opset: the model is malformed.
func (n *Node) CheckAttrOpsets(attrs ...OpsetAttr) error {
	for _, a := range attrs {
		if _, ok := n.Attrs[a.Name]; !ok {
			continue
		}
		if n.Opset < a.Since {
			return fmt.Errorf("attribute %q is defined from opset %d, the model imports opset %d", a.Name, a.Since, n.Opset)
		}
		if a.Until != 0 && n.Opset > a.Until {
			return fmt.Errorf("attribute %q was removed after opset %d, the model imports opset %d", a.Name, a.Until, n.Opset)
		}
	}
	return nil
}
