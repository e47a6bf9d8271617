package ops

import (
	"fmt"

	"github.com/quantserve/quantserve/tensor"
)

// Gather returns data[idx[i]] for each i. data is the untyped slice a
// tensor.Tensor holds (every element type, strings included), and so is
// the result; every index is in range.
func Gather(data any, idx []int) any {
	switch d := data.(type) {
	case []bool:
		return take(d, idx)
	case []uint8:
		return take(d, idx)
	case []uint16:
		return take(d, idx)
	case []uint32:
		return take(d, idx)
	case []uint64:
		return take(d, idx)
	case []int8:
		return take(d, idx)
	case []int16:
		return take(d, idx)
	case []int32:
		return take(d, idx)
	case []int64:
		return take(d, idx)
	case []float32:
		return take(d, idx)
	case []float64:
		return take(d, idx)
	case []tensor.F16:
		return take(d, idx)
	case []tensor.BF16:
		return take(d, idx)
	case []string:
		return take(d, idx)
	}
	panic(fmt.Sprintf("ops: Gather of %T", data)) // tensors hold one of the types above
}

func take[T tensor.Elem](d []T, idx []int) []T {
	r := make([]T, len(idx))
	for i, j := range idx {
		r[i] = d[j]
	}
	return r
}
