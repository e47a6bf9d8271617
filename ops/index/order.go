package index

import (
	"cmp"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// compareOf returns a three-way comparison of two elements of x by their
// offsets (TopK, Unique). Floating-point NaNs order after every number
// and equal each other, as numpy sorts them.
func compareOf(x *tensor.Tensor) (func(i, j int) int, error) {
	switch d := x.Data.(type) {
	case []float32:
		return func(i, j int) int { return nanLast(d[i], d[j]) }, nil
	case []float64:
		return func(i, j int) int { return nanLast(d[i], d[j]) }, nil
	case []tensor.F16:
		f := tensor.HalfToFloat32(d)
		return func(i, j int) int { return nanLast(f[i], f[j]) }, nil
	case []tensor.BF16:
		f := tensor.HalfToFloat32(d)
		return func(i, j int) int { return nanLast(f[i], f[j]) }, nil
	case []int8:
		return ordered(d), nil
	case []uint8:
		return ordered(d), nil
	case []int16:
		return ordered(d), nil
	case []uint16:
		return ordered(d), nil
	case []int32:
		return ordered(d), nil
	case []uint32:
		return ordered(d), nil
	case []int64:
		return ordered(d), nil
	case []uint64:
		return ordered(d), nil
	case []string:
		return ordered(d), nil
	case []bool:
		return func(i, j int) int {
			switch {
			case d[i] == d[j]:
				return 0
			case d[j]:
				return -1
			}
			return 1
		}, nil
	}
	return nil, ops.InputErrorf("cannot order %v elements", x.DType)
}

func ordered[T cmp.Ordered](d []T) func(i, j int) int {
	return func(i, j int) int { return cmp.Compare(d[i], d[j]) }
}

func nanLast[T float32 | float64](a, b T) int {
	an, bn := a != a, b != b
	switch {
	case an || bn:
		return cmp.Compare(boolInt(an), boolInt(bn))
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
