// Package kernels holds the pure-Go reference kernels of quantserve. Each
// function's doc comment and loop are its specification: every SIMD kernel in
// kernels/amd64 and kernels/arm64 is tested against its twin here.
//
// This package imports nothing of the project.
package kernels
