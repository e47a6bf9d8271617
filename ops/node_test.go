package ops

import "testing"

// TestArityAndAbsentInputs checks which absent (empty-named) inputs each
// check refuses.
func TestArityAndAbsentInputs(t *testing.T) {
	for _, c := range []struct {
		inputs []string
		check  string
		ok     bool
	}{
		{[]string{"x", "w", ""}, "arity 2..3", true},
		{[]string{"x", "", "b"}, "arity 2..3", false},
		{[]string{"", "w"}, "arity 2..3", false},
		{[]string{"x"}, "arity 2..3", false},
		{[]string{"", "w"}, "counts 2..3", true},
		{[]string{"", "", "v"}, "from 2", true},
		{[]string{"", "", "v", ""}, "from 2", false},
		{[]string{"x", ""}, "inputs 1", true},
		{[]string{"", "w"}, "inputs 1", false},
	} {
		n := &Node{Inputs: c.inputs, Outputs: []string{"y"}}
		var err error
		switch c.check {
		case "arity 2..3":
			err = n.CheckArity(2, 3, 1, 1)
		case "counts 2..3":
			err = n.CheckCounts(2, 3, 1, 1)
		case "from 2":
			err = n.RequireFrom(2)
		case "inputs 1":
			err = n.RequireInputs(1)
		}
		if (err == nil) != c.ok {
			t.Errorf("%s on %q: error %v, want one: %v", c.check, c.inputs, err, !c.ok)
		}
	}
}
