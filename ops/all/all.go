// Package all registers every operator family: importing it (as package
// model does) makes every operator quantserve implements known to the
// registry.
package all

import (
	// One line per family package under ops/.
	_ "github.com/quantserve/quantserve/ops"
)
