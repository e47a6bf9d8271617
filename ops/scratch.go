package ops

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Scratch memory: the float32 buffers an operator needs only while it runs
// (im2col images, padded panels, per-head scores) come from one set of
// pools, in power-of-two classes, so that an operator run thousands of
// times a second does not hand the collector a fresh buffer each time.
// What an operator returns is never scratch: its outputs outlive its Run.

// Scratch buffers hold from 1<<minScratchClass to 1<<maxScratchClass
// elements; longer ones are allocated and dropped, being rare and large
// enough that holding them would pin memory a model rarely needs.
const (
	minScratchClass = 6  // 64 floats
	maxScratchClass = 24 // 64 MiB of floats
)

// scratchPools hold each class's buffers by their first element: a
// pointer goes in and out of a sync.Pool without an allocation, where a
// slice header would need one.
var scratchPools [maxScratchClass - minScratchClass + 1]sync.Pool

// scratchClass returns the pool index whose buffers hold n elements, or
// -1 when n is above the largest class.
func scratchClass(n int) int {
	c := bits.Len(uint(max(n, 1) - 1)) // the least c with 1<<c >= n
	if c > maxScratchClass {
		return -1
	}
	return max(c, minScratchClass) - minScratchClass
}

// Scratch returns a float32 buffer of n elements for use during the
// operator's Run; its contents are unspecified (clear it when the
// algorithm needs zeros). Give it back with Free once nothing reads it.
// A nil Context serves too: scratch does not depend on the request.
func (c *Context) Scratch(n int) []float32 {
	k := scratchClass(n)
	if k < 0 {
		return make([]float32, n)
	}
	size := 1 << (k + minScratchClass)
	if p, ok := scratchPools[k].Get().(*float32); ok {
		return unsafe.Slice(p, size)[:n]
	}
	return make([]float32, n, size)
}

// Free returns b, a buffer Scratch gave, for later calls to reuse. b must
// not be used afterwards; a buffer Scratch did not give is dropped.
func (c *Context) Free(b []float32) {
	k := scratchClass(cap(b))
	if k < 0 || cap(b) != 1<<(k+minScratchClass) {
		return
	}
	scratchPools[k].Put(unsafe.SliceData(b[:cap(b)]))
}
