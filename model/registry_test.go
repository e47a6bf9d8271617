package model

import "testing"

func TestOverlappingRegistrationPanics(t *testing.T) {
	defer delete(registry, opKey{"", "TestOnlyOp"})
	register(Descriptor{Type: "TestOnlyOp", Since: 1, Until: 10}, func(*node, *noAttrs) (opFunc, error) { return nil, nil })
	register(Descriptor{Type: "TestOnlyOp", Since: 11}, func(*node, *noAttrs) (opFunc, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Error("registering overlapping opsets did not panic")
		}
	}()
	register(Descriptor{Type: "TestOnlyOp", Since: 10}, func(*node, *noAttrs) (opFunc, error) { return nil, nil })
}
