package spatial

import "github.com/quantserve/quantserve/ops"

// checkEvery is about how many elements (or multiply-adds) the operators
// of this package compute between looks at the request's context.
const checkEvery = 1 << 16

// meter counts the work of one run and looks at the request's context once
// per checkEvery units of it.
type meter struct {
	c    *ops.Context
	work int
}

// spend counts work units and returns the request's error once it is
// cancelled or past its deadline.
func (m *meter) spend(work int) error {
	m.work += work
	if m.work < checkEvery {
		return nil
	}
	return m.look()
}

func (m *meter) look() error {
	m.work = 0
	return m.c.Err()
}
