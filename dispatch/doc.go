// Package dispatch chooses quantserve's kernels. At init it reads the CPU's
// features (github.com/klauspost/cpuid/v2) once and builds one immutable
// kernel table: AVX2 on amd64 CPUs with AVX2 and FMA, NEON on arm64 (with
// SDOT where the CPU reports dotprod), the pure-Go reference otherwise.
// Select forces a table by name and refuses one the CPU cannot run, so a
// forced choice is a clear start-up error, never SIGILL.
//
// Exec runs whole products on a table: it quantizes activations per row,
// walks packed weights panel by panel (each panel stays in L1 while every
// row tile passes over it), applies the zero-point and scale epilogue, and
// splits large products across a bounded pool of worker goroutines.
package dispatch
