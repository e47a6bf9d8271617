// Package amd64 holds quantserve's AVX2 (+FMA) assembly kernels. Each is
// the twin of a pure-Go reference in package kernels and is tested against
// it. The kernels require AVX2 (and FMA for the float ones): package
// dispatch calls them only on CPUs that report those features.
//
// In builds for other architectures, or with the purego tag, Available is
// false and the functions forward to the references.
package amd64
