//go:build amd64 && gc && !purego

package main

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/quantserve/quantserve/kernels/amd64"
)

type peaks struct {
	name            string
	iters           int
	int8Ops, f32Ops int
	int8            func(int) int32
	f32             func(int) float32
	read            func([]byte) uint64
}

func peakLoops() (peaks, bool) {
	if !cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3) {
		return peaks{}, false
	}
	return peaks{
		name: "avx2", iters: 1 << 20,
		int8Ops: amd64.PeakInt8OpsPerIter, f32Ops: amd64.PeakF32OpsPerIter,
		int8: amd64.PeakInt8, f32: amd64.PeakF32, read: amd64.ReadSum,
	}, true
}
