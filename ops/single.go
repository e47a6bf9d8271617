package ops

import (
	"unsafe"

	"github.com/quantserve/quantserve/tensor"
)

// Single is a step's one output tensor, its shape and the step's result
// slice in one allocation (NewSingle), or none: a run's Arena hands out
// the Singles of its earlier runs again (Context.NewSingle). A small
// model's steps run by the thousand a second, and these were four
// allocations each, the output's data boxed as an interface among them.
type Single struct {
	t     tensor.Tensor
	outs  [1]*tensor.Tensor
	array [6]int
	shape []int // in array, or its own for a rank beyond it; len == cap
	box   any   // the last data Float32s held, boxed once (immutable; it keeps that buffer reachable while the Arena lives)
}

// NewSingle returns a Single of rank dimensions.
func NewSingle(rank int) *Single {
	r := new(Single)
	r.Reset(rank)
	return r
}

// Reset makes r (zero, or one a struct embeds) a Single of rank
// dimensions.
func (r *Single) Reset(rank int) {
	*r = Single{box: r.box}
	if rank <= len(r.array) {
		r.shape = r.array[:rank:rank]
	} else {
		r.shape = make([]int, rank)
	}
}

// Shape returns the output's shape for the caller to fill: rank values,
// no room to append.
func (r *Single) Shape() []int { return r.shape }

// Outputs returns the step's result: one tensor of type dt and r's shape
// holding data.
func (r *Single) Outputs(dt tensor.DataType, data any) []*tensor.Tensor {
	r.t = tensor.Tensor{DType: dt, Shape: r.shape, Data: data}
	return r.Hold(&r.t)
}

// Float32s returns the step's result: one float32 tensor of r's shape
// holding y, as Outputs does, without boxing y again when r held the
// same slice (its address, length and capacity) before: a step given
// its Single and its output buffer back by the run's Arena boxes them
// once, not every run.
func (r *Single) Float32s(y []float32) []*tensor.Tensor {
	if old, ok := r.box.([]float32); !ok || len(old) != len(y) || cap(old) != cap(y) || unsafe.SliceData(old) != unsafe.SliceData(y) {
		r.box = y
	}
	r.t = tensor.Tensor{DType: tensor.Float32, Shape: r.shape, Data: r.box}
	return r.Hold(&r.t)
}

// Hold returns the step's result holding t instead of r's tensor (an
// output made another way after all).
func (r *Single) Hold(t *tensor.Tensor) []*tensor.Tensor {
	r.outs[0] = t
	return r.outs[:]
}

// Tensor returns the output tensor Outputs made.
func (r *Single) Tensor() *tensor.Tensor { return &r.t }
