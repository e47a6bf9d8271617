//go:build race

package model_test

// planRace tells the memory plan's tests that the race detector is on:
// sync.Pool then drops a random share of what it is given, and recycled
// buffers are filled with NaNs before an operator takes them.
const planRace = true
