//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// LeakyReluAVX2 forwards to kernels.LeakyRelu in builds without assembly.
func LeakyReluAVX2(dst, src []float32, alpha float32) { kernels.LeakyRelu(dst, src, alpha) }

// LeakyReluAVX512 forwards to kernels.LeakyRelu in builds without
// assembly.
func LeakyReluAVX512(dst, src []float32, alpha float32) { kernels.LeakyRelu(dst, src, alpha) }

// MaxMinConstAVX2 forwards to kernels.MaxMinConst in builds without
// assembly.
func MaxMinConstAVX2(dst []float32, c float32, isMin bool) { kernels.MaxMinConst(dst, c, isMin) }

// MaxMinConstAVX512 forwards to kernels.MaxMinConst in builds without
// assembly.
func MaxMinConstAVX512(dst []float32, c float32, isMin bool) { kernels.MaxMinConst(dst, c, isMin) }

// MaxPairAVX2 forwards to kernels.MaxPair in builds without assembly.
func MaxPairAVX2(dst, a, b []float32) { kernels.MaxPair(dst, a, b) }

// MaxColsAVX2 forwards to kernels.MaxCols in builds without assembly.
func MaxColsAVX2(dst, src []float32, n, ch, step, taps, tapStep int) {
	kernels.MaxCols(dst, src, n, ch, step, taps, tapStep)
}

// MaxPairAVX512 forwards to kernels.MaxPair in builds without assembly.
func MaxPairAVX512(dst, a, b []float32) { kernels.MaxPair(dst, a, b) }

// MaxColsAVX512 forwards to kernels.MaxCols in builds without assembly.
func MaxColsAVX512(dst, src []float32, n, ch, step, taps, tapStep int) {
	kernels.MaxCols(dst, src, n, ch, step, taps, tapStep)
}
