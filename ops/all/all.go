// Package all registers every operator family: importing it (as package
// model does) makes every operator quantserve implements known to the
// registry.
package all

import (
	// One line per family package under ops/.
	_ "github.com/quantserve/quantserve/ops"
	_ "github.com/quantserve/quantserve/ops/activation"
	_ "github.com/quantserve/quantserve/ops/arith"
	_ "github.com/quantserve/quantserve/ops/attention"
	_ "github.com/quantserve/quantserve/ops/contrib"
	_ "github.com/quantserve/quantserve/ops/control"
	_ "github.com/quantserve/quantserve/ops/conv"
	_ "github.com/quantserve/quantserve/ops/detection"
	_ "github.com/quantserve/quantserve/ops/image"
	_ "github.com/quantserve/quantserve/ops/index"
	_ "github.com/quantserve/quantserve/ops/linalg"
	_ "github.com/quantserve/quantserve/ops/logic"
	_ "github.com/quantserve/quantserve/ops/loss"
	_ "github.com/quantserve/quantserve/ops/matmul"
	_ "github.com/quantserve/quantserve/ops/ml"
	_ "github.com/quantserve/quantserve/ops/norm"
	_ "github.com/quantserve/quantserve/ops/pool"
	_ "github.com/quantserve/quantserve/ops/random"
	_ "github.com/quantserve/quantserve/ops/reduce"
	_ "github.com/quantserve/quantserve/ops/rnn"
	_ "github.com/quantserve/quantserve/ops/signal"
	_ "github.com/quantserve/quantserve/ops/spatial"
	_ "github.com/quantserve/quantserve/ops/tensor"
	_ "github.com/quantserve/quantserve/ops/text"
	_ "github.com/quantserve/quantserve/ops/training"
)
