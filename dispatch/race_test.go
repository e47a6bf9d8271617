//go:build race

package dispatch

// raceEnabled tells the block tests that the race detector is on: it
// checks nothing in assembly and slows the reference they compare with
// tenfold, so they run the shorter list of row counts.
const raceEnabled = true
