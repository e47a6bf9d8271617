//go:build !amd64 || !gc || purego

package amd64

import "github.com/quantserve/quantserve/kernels"

// FRowAVX512 forwards to kernels.FRowRef in builds without assembly.
func FRowAVX512(f *kernels.FBlock) { kernels.FRowRef(f) }

// FRowAVX2 forwards to kernels.FRowRef in builds without assembly.
func FRowAVX2(f *kernels.FBlock) { kernels.FRowRef(f) }
