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
	old := Register(Descriptor{Domain: "com.example", Type: "TestLookupOp", Since: 3, Until: 5}, build)
	cur := Register(Descriptor{Domain: "com.example", Type: "TestLookupOp", Since: 7}, build)
	for opset, want := range map[int64]*Descriptor{3: old, 5: old, 7: cur, 1 << 20: cur} {
		d, err := Lookup("com.example", "TestLookupOp", opset)
		if err != nil || d != want {
			t.Errorf("Lookup at opset %d = %v, %v; want %v, the descriptor Register returned", opset, d, err, want)
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

// TestOpHas: an Op holds the descriptors Register returned for it, and
// no other.
func TestOpHas(t *testing.T) {
	defer delete(registry, opKey{"com.example", "TestOpHas"})
	defer delete(registry, opKey{"com.example", "TestOpHasOther"})
	none := func(*Node, *NoAttrs) (Operator, error) { return nil, nil }
	op := Op{
		Register(Descriptor{Domain: "com.example", Type: "TestOpHas", Since: 1, Until: 4}, none),
		Register(Descriptor{Domain: "com.example", Type: "TestOpHas", Since: 5}, none),
	}
	other := Register(Descriptor{Domain: "com.example", Type: "TestOpHasOther", Since: 1}, none)
	for _, opset := range []int64{1, 4, 5, 9} {
		d, err := Lookup("com.example", "TestOpHas", opset)
		if err != nil || !op.Has(d) {
			t.Errorf("the descriptor found at opset %d (%v, %v) is not in the Op", opset, d, err)
		}
	}
	if op.Has(other) || op.Has(nil) {
		t.Error("Op.Has holds a descriptor registered for another operator")
	}
}
