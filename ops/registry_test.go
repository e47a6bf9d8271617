package ops

import (
	"errors"
	"testing"
)

func TestOverlappingRegistrationPanics(t *testing.T) {
	defer delete(registry, opKey{"", "TestOnlyOp"})
	none := func(*Node, *NoAttrs) (Operator, error) { return nil, nil }
	Register(Descriptor{Type: "TestOnlyOp", Since: 1, Until: 10}, none)
	Register(Descriptor{Type: "TestOnlyOp", Since: 11}, none)
	defer func() {
		if recover() == nil {
			t.Error("registering overlapping opsets did not panic")
		}
	}()
	Register(Descriptor{Type: "TestOnlyOp", Since: 10}, none)
}

// TestLookup: a node finds the descriptor whose range holds its opset;
// an opset no descriptor covers, or an unknown operator, is unsupported.
func TestLookup(t *testing.T) {
	defer delete(registry, opKey{"com.example", "TestLookupOp"})
	type attrs struct {
		Alpha float32 `onnx:"alpha" default:"1"`
	}
	build := func(n *Node, a *attrs) (Operator, error) {
		return Func(nil), nil
	}
	Register(Descriptor{Domain: "com.example", Type: "TestLookupOp", Since: 3, Until: 5}, build)
	Register(Descriptor{Domain: "com.example", Type: "TestLookupOp", Since: 7}, build)
	for opset, want := range map[int64]int64{3: 3, 5: 3, 7: 7, 1 << 20: 7} {
		d, err := Lookup("com.example", "TestLookupOp", opset)
		if err != nil || d.Since != want {
			t.Errorf("Lookup at opset %d = %v, %v; want the descriptor from %d", opset, d, err, want)
		}
	}
	for _, opset := range []int64{2, 6} {
		if _, err := Lookup("com.example", "TestLookupOp", opset); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Lookup at opset %d: %v, want ErrUnsupported", opset, err)
		}
	}
	if _, err := Lookup("", "NoSuchOp", 13); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown operator: %v", err)
	}
	d, _ := Lookup("com.example", "TestLookupOp", 7)
	a, err := d.Parse(&Node{Attrs: nil})
	if err != nil || a.(*attrs).Alpha != 1 {
		t.Errorf("Parse with no attributes = %+v, %v; want the default alpha 1", a, err)
	}
}
