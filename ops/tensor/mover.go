package tensor

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Mover moves elements between the untyped slices of tensor.Tensor.Data
// that hold one element type. The data-movement operators (Slice, Split,
// Gather, Transpose, Concat, ...) run on it for every element type, and it
// copies whole contiguous runs with copy().
type Mover interface {
	// Alloc returns a zeroed slice of n elements.
	Alloc(n int) any
	// Clone returns a copy of src.
	Clone(src any) any
	// Strided fills dst in row-major order of shape from src at
	// base + Σ index·strides.
	Strided(dst, src any, shape, strides []int, base int)
	// Runs copies len(offs) runs of run elements:
	// dst[at+i·run:][:run] = src[base+offs[i]:][:run].
	Runs(dst any, at int, src any, base int, offs []int, run int)
	// Put is Runs' converse: dst[base+offs[i]:][:run] = src[at+i·run:][:run].
	Put(dst any, base int, offs []int, src any, at int, run int)
	// CopyN copies dst[d:d+n] = src[s:s+n].
	CopyN(dst any, d int, src any, s, n int)
	// Fill sets dst[d:d+n] to v (a slice holding one element of the type).
	Fill(dst any, d, n int, v any)

	// strided is Strided counting its work with c.Tick (c may be nil).
	strided(c *ops.Context, dst, src any, shape, strides []int, base int) error
	// slice returns src[lo:hi].
	slice(src any, lo, hi int) any
}

type typedMover[T tensor.Elem] struct{}

func (typedMover[T]) Alloc(n int) any   { return make([]T, n) }
func (typedMover[T]) Clone(src any) any { return append([]T(nil), src.([]T)...) }

func (typedMover[T]) Strided(dst, src any, shape, strides []int, base int) {
	_ = stridedCopy(nil, dst.([]T), src.([]T), shape, strides, base) // no request: never stops
}

func (typedMover[T]) strided(c *ops.Context, dst, src any, shape, strides []int, base int) error {
	return stridedCopy(c, dst.([]T), src.([]T), shape, strides, base)
}

func (typedMover[T]) slice(src any, lo, hi int) any { return src.([]T)[lo:hi] }

func (typedMover[T]) Runs(dst any, at int, src any, base int, offs []int, run int) {
	d, s := dst.([]T)[at:], src.([]T)[base:]
	if run == 1 {
		for i, o := range offs {
			d[i] = s[o]
		}
		return
	}
	for i, o := range offs {
		copy(d[i*run:(i+1)*run], s[o:o+run])
	}
}

func (typedMover[T]) Put(dst any, base int, offs []int, src any, at int, run int) {
	d, s := dst.([]T)[base:], src.([]T)[at:]
	if run == 1 {
		for i, o := range offs {
			d[o] = s[i]
		}
		return
	}
	for i, o := range offs {
		copy(d[o:o+run], s[i*run:(i+1)*run])
	}
}

func (typedMover[T]) CopyN(dst any, d int, src any, s, n int) {
	copy(dst.([]T)[d:d+n], src.([]T)[s:s+n])
}

func (typedMover[T]) Fill(dst any, d, n int, v any) {
	x := v.([]T)[0]
	r := dst.([]T)[d : d+n]
	for i := range r {
		r[i] = x
	}
}

// MoverOf returns the Mover of dt's element type.
func MoverOf(dt tensor.DataType) Mover {
	switch dt {
	case tensor.Bool:
		return typedMover[bool]{}
	case tensor.Uint8:
		return typedMover[uint8]{}
	case tensor.Uint16:
		return typedMover[uint16]{}
	case tensor.Uint32:
		return typedMover[uint32]{}
	case tensor.Uint64:
		return typedMover[uint64]{}
	case tensor.Int8:
		return typedMover[int8]{}
	case tensor.Int16:
		return typedMover[int16]{}
	case tensor.Int32:
		return typedMover[int32]{}
	case tensor.Int64:
		return typedMover[int64]{}
	case tensor.Float32:
		return typedMover[float32]{}
	case tensor.Float64:
		return typedMover[float64]{}
	case tensor.Float16:
		return typedMover[tensor.F16]{}
	case tensor.BFloat16:
		return typedMover[tensor.BF16]{}
	case tensor.String:
		return typedMover[string]{}
	}
	panic(fmt.Sprintf("model: no element type %v", dt)) // tensors are built with a valid type
}
