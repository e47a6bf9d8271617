//go:build race

package ops

import "math"

// Under the race detector a recycled output buffer is filled with NaNs
// before an operator takes it: an operator that leaves an element
// unwritten then shows in every test run with -race.
const poisonRecycled = true

func poison(b []float32) {
	nan := float32(math.NaN())
	for i := range b {
		b[i] = nan
	}
}
