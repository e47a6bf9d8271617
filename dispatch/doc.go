// Package dispatch chooses quantserve's kernels. At init it reads the CPU's
// features (github.com/klauspost/cpuid/v2) and the register state the OS
// saves (XCR0) once and orders the kernel tables this build has, best
// first: on amd64 AVX-512 VNNI, AVX-512, AVX-VNNI and AVX2; on arm64 I8MM,
// SDOT and NEON; the pure-Go reference last, everywhere. Default is the
// best table the CPU runs; Select forces a table by name and refuses one
// the CPU cannot run, so a forced choice is a clear start-up error, never
// SIGILL. Every table gives the reference's bits, but for the kernels that
// fuse multiply-adds where their reference does not (ConvTaps), which
// agree within the rounding the reference states.
//
// The tables are immutable; package gemm runs whole products on them.
// CheckAutodiff is the one check of whether this build serves gradients.
package dispatch
