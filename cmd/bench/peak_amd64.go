//go:build amd64 && gc && !purego

package main

import (
	"github.com/quantserve/quantserve/dispatch"
	"github.com/quantserve/quantserve/kernels/amd64"
)

// ceilingsOf returns the register-only loops that bound table t's
// products: its int8 instruction chain and its float FMA width.
func ceilingsOf(t *dispatch.Table) (int8Loop, f32Loop *loop) {
	ymmFMA := &loop{"FMA ymm", amd64.PeakF32OpsPerIter, func(n int) { amd64.PeakF32(n) }}
	zmmFMA := &loop{"FMA zmm", amd64.PeakF32ZmmOpsPerIter, func(n int) { amd64.PeakF32Zmm(n) }}
	maddubs := &loop{"vpmaddubsw ymm", amd64.PeakInt8OpsPerIter, func(n int) { amd64.PeakInt8(n) }}
	switch t.Name {
	case "amx":
		return &loop{"tdpbusd tiles", amd64.PeakAMXOpsPerIter, func(n int) { amd64.PeakAMX(n) }}, zmmFMA
	case "avx512vnni":
		return &loop{"vpdpbusd zmm", amd64.PeakVNNI512OpsPerIter, func(n int) { amd64.PeakVNNI512(n) }}, zmmFMA
	case "avx512":
		return maddubs, zmmFMA
	case "avxvnni":
		return &loop{"vpdpbusd ymm", amd64.PeakAVXVNNIOpsPerIter, func(n int) { amd64.PeakAVXVNNI(n) }}, ymmFMA
	case "avx2":
		return maddubs, ymmFMA
	}
	return nil, nil
}

// readLoops stream a buffer through vector loads, as one stream and as
// four, or are nil.
func readLoops() []func([]byte) {
	if !amd64.Available {
		return nil
	}
	return []func([]byte){func(b []byte) { amd64.ReadSum(b) }, func(b []byte) { amd64.ReadSum4(b) }}
}
