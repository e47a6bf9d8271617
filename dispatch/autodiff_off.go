//go:build !autodiff

package dispatch

// AutodiffBuilt reports whether this build serves gradients.
const AutodiffBuilt = false
