package index

import (
	"fmt"
	"slices"

	"github.com/quantserve/quantserve/ops"
	tensorops "github.com/quantserve/quantserve/ops/tensor"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "ReverseSequence", Since: 10, Fold: true}, buildReverseSequence)
}

// ReverseSequenceAttrs are ReverseSequence's attributes.
type ReverseSequenceAttrs struct {
	BatchAxis int64 `onnx:"batch_axis" default:"1"`
	TimeAxis  int64 `onnx:"time_axis"`
}

// reverseSequence is a compiled ReverseSequence: which of the first two
// axes is time (the other is the batch).
type reverseSequence struct{ batchAxis, timeAxis int }

func buildReverseSequence(n *ops.Node, at *ReverseSequenceAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	ba, ta := at.BatchAxis, at.TimeAxis
	if ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta {
		return nil, fmt.Errorf("ReverseSequence batch_axis %d and time_axis %d must be 0 and 1", ba, ta)
	}
	return reverseSequence{batchAxis: int(ba), timeAxis: int(ta)}, nil
}

func (r reverseSequence) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, lt := in[0], in[1]
	ba, ta := r.batchAxis, r.timeAxis
	if x.Rank() < 2 {
		return nil, ops.InputErrorf("ReverseSequence needs rank >= 2, got %s", tensor.ShapeString(x.Shape))
	}
	steps, batch := x.Shape[ta], x.Shape[ba]
	lens, err := indexValues(lt, "ReverseSequence sequence_lens")
	if err != nil {
		return nil, err
	}
	if len(lens) != batch || lt.Rank() != 1 {
		return nil, ops.InputErrorf("ReverseSequence sequence_lens has shape %s for a batch of %d", tensor.ShapeString(lt.Shape), batch)
	}
	for _, l := range lens {
		if l < 0 || l > int64(steps) {
			return nil, ops.InputErrorf("ReverseSequence length %d is out of range [0, %d]", l, steps)
		}
	}
	y, size, err := NewTensor(c, x.DType, slices.Clone(x.Shape))
	if err != nil || size == 0 {
		return out1(y), err
	}
	inner := product(x.Shape[2:])
	d1 := x.Shape[1]
	offs := make([]int, x.Shape[0]*d1)
	for i0 := 0; i0 < x.Shape[0]; i0++ {
		if err := c.Tick(d1); err != nil {
			return nil, err
		}
		for i1 := 0; i1 < d1; i1++ {
			t, b := i0, i1
			if ta == 1 {
				t, b = i1, i0
			}
			if l := int(lens[b]); t < l {
				t = l - 1 - t
			}
			src := t*d1 + b // time axis 0: [t, b]
			if ta == 1 {
				src = b*d1 + t
			}
			offs[i0*d1+i1] = src * inner
		}
	}
	if err := runs(c, tensorops.MoverOf(x.DType), y.Data, 0, x.Data, 0, offs, inner); err != nil {
		return nil, err
	}
	return out1(y), nil
}
