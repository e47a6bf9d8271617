package tensor

import (
	"bytes"
	"reflect"
	"slices"
)

// SliceRows returns rows [off, off+n) of t along its first dimension,
// sharing t's data (t itself when they are all of its rows).
func (t *Tensor) SliceRows(off, n int) *Tensor {
	if off == 0 && n == t.Shape[0] {
		return t
	}
	inner := 1
	for _, d := range t.Shape[1:] {
		inner *= d
	}
	shape := slices.Clone(t.Shape)
	shape[0] = n
	data := reflect.ValueOf(t.Data).Slice3(off*inner, (off+n)*inner, (off+n)*inner).Interface()
	return &Tensor{DType: t.DType, Shape: shape, Data: data}
}

// SameBits reports whether a and b have the same type, shape and values,
// bit for bit (NaNs included, each by its payload; 0 and -0 differ).
func SameBits(a, b *Tensor) bool {
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		return false
	}
	if ma := memoryOf(a.Data); ma != nil {
		mb := memoryOf(b.Data)
		return mb != nil && bytes.Equal(ma, mb)
	}
	switch x := a.Data.(type) {
	case []bool:
		y, ok := b.Data.([]bool)
		return ok && slices.Equal(x, y)
	case []string:
		y, ok := b.Data.([]string)
		return ok && slices.Equal(x, y)
	}
	return false
}
