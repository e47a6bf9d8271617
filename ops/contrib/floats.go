package contrib

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// checkEvery is about how many elements an operator of this package
// computes between two looks at the request's context.
const checkEvery = 1 << 16

// values returns the values of t, an input of op named what, as float32:
// a FLOAT tensor's own data (which the caller must not modify) or a
// FLOAT16 tensor's values converted. Other types are input errors.
func values(op, what string, t *tensor.Tensor) ([]float32, error) {
	switch d := t.Data.(type) {
	case []float32:
		return d, nil
	case []tensor.F16:
		return tensor.HalfToFloat32(d), nil
	}
	return nil, ops.InputErrorf("%s takes FLOAT or FLOAT16 %s, got %v", op, what, t.DType)
}

// sameType fails unless each present tensor of ts has x's type.
func sameType(op string, x *tensor.Tensor, ts ...*tensor.Tensor) error {
	return ops.SameType(op, append([]*tensor.Tensor{x}, ts...)...)
}

// result returns values computed in float32 as a tensor of type dt (FLOAT
// or FLOAT16) and the given shape; it keeps v for FLOAT.
func result(dt tensor.DataType, shape []int, v []float32) *tensor.Tensor {
	shape = append([]int(nil), shape...)
	if dt == tensor.Float16 {
		return &tensor.Tensor{DType: dt, Shape: shape, Data: tensor.Float32ToHalf[tensor.F16](v)}
	}
	return &tensor.Tensor{DType: tensor.Float32, Shape: shape, Data: v}
}

// vector checks that t, an input of op named what, is a 1-D tensor of n
// values.
func vector(op, what string, t *tensor.Tensor, n int) error {
	if t.Rank() != 1 || t.Shape[0] != n {
		return ops.InputErrorf("%s's %s must have shape [%d], got %s", op, what, n, tensor.ShapeString(t.Shape))
	}
	return nil
}

// rowBlocks calls f on blocks [r0, r1) of rows rows of size values each,
// about checkEvery values a block, and looks at the request's context
// before each block.
func rowBlocks(c *ops.Context, rows, size int, f func(r0, r1 int)) error {
	step := max(1, checkEvery/max(size, 1))
	for r0 := 0; r0 < rows; r0 += step {
		if err := c.Err(); err != nil {
			return err
		}
		f(r0, min(rows, r0+step))
	}
	return nil
}
