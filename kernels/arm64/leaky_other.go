//go:build !arm64 || !gc || purego

package arm64

import "github.com/quantserve/quantserve/kernels"

// LeakyReluNEON forwards to kernels.LeakyRelu in builds without assembly.
func LeakyReluNEON(dst, src []float32, alpha float32) { kernels.LeakyRelu(dst, src, alpha) }

// MaxMinConstNEON forwards to kernels.MaxMinConst in builds without
// assembly.
func MaxMinConstNEON(dst []float32, c float32, isMin bool) { kernels.MaxMinConst(dst, c, isMin) }

// MaxPairNEON forwards to kernels.MaxPair in builds without assembly.
func MaxPairNEON(dst, a, b []float32) { kernels.MaxPair(dst, a, b) }
