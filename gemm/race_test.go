//go:build race

package gemm

// raceEnabled tells tests that count allocations that the race detector
// is on: sync.Pool then drops a random share of what it is given.
const raceEnabled = true
