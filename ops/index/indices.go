package index

import (
	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

// indexValues reads a tensor of INT32 or INT64 indices.
func indexValues(t *tensor.Tensor, what string) ([]int64, error) {
	switch d := t.Data.(type) {
	case []int64:
		return d, nil
	case []int32:
		v := make([]int64, len(d))
		for i, x := range d {
			v[i] = int64(x)
		}
		return v, nil
	}
	return nil, ops.InputErrorf("%s must be INT32 or INT64, got %v", what, t.DType)
}

// wrap maps an index in [-dim, dim) to [0, dim).
func wrap(i int64, dim int, what string) (int, error) {
	if i < -int64(dim) || i >= int64(dim) {
		return 0, ops.InputErrorf("%s index %d is out of range for an axis of %d", what, i, dim)
	}
	if i < 0 {
		i += int64(dim)
	}
	return int(i), nil
}

// product multiplies dimensions of a tensor that exists and is not
// empty, so the product cannot exceed its element count.
func product(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// NewTensor returns a new zeroed tensor of type dt and the given shape,
// and its element count, refusing shapes beyond tensor.MaxElements as
// input errors and asking c's budget before allocating.
func NewTensor(c *ops.Context, dt tensor.DataType, shape []int) (*tensor.Tensor, int, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, 0, ops.InputErrorf("%v", err)
	}
	if err := c.ReserveTensor(dt, shape); err != nil {
		return nil, 0, err
	}
	return &tensor.Tensor{DType: dt, Shape: shape, Data: tensorops.MoverOf(dt).Alloc(n)}, n, nil
}

// newFilled is NewTensor for an operator that writes every element of
// its output: a float32 output comes from c.Float32Output (a run's
// recycled buffer, its contents unspecified) rather than fresh memory,
// which an embedding table's rows (a transformer's first step, 128 KB to
// a few MB a run) otherwise fault in page by page.
func newFilled(c *ops.Context, dt tensor.DataType, shape []int) (*tensor.Tensor, int, error) {
	if dt != tensor.Float32 {
		return NewTensor(c, dt, shape)
	}
	if _, err := tensor.NumElements(shape); err != nil {
		return nil, 0, ops.InputErrorf("%v", err)
	}
	if err := c.ReserveTensor(dt, shape); err != nil {
		return nil, 0, err
	}
	y, err := c.NewFloat32(shape)
	if err != nil {
		return nil, 0, err
	}
	return y, y.Len(), nil
}

func out1(t *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{t} }

// geometry views a non-empty shape as [outer, dim, inner] around axis a.
func geometry(shape []int, a int) (outer, dim, inner int) {
	return product(shape[:a]), shape[a], product(shape[a+1:])
}
