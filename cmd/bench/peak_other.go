//go:build !amd64 || !gc || purego

package main

type peaks struct {
	name            string
	iters           int
	int8Ops, f32Ops int
	int8            func(int) int32
	f32             func(int) float32
	read            func([]byte) uint64
}

func peakLoops() (peaks, bool) { return peaks{}, false }
