package tensor

import (
	"math"
	"math/big"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "Range", Since: 11, Until: 26, Fold: true}, func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		return buildRange(n, &RangeAttrs{StashType: 1})
	})
	ops.Register(ops.Descriptor{Type: "Range", Since: 27, Fold: true}, buildRange)
}

// RangeAttrs are Range's attributes (opset 27).
type RangeAttrs struct {
	// StashType is the ONNX type FP16 and BF16 ranges are computed in:
	// 1 (FLOAT) computes start + i·delta in float32; anything else
	// accumulates delta in the output's own precision.
	StashType int64 `onnx:"stash_type" default:"1"`
}

// rangeOp is a compiled Range: whether FP16 and BF16 ranges are computed
// in float32 (stash_type FLOAT).
type rangeOp struct{ stash bool }

// buildRange implements Range: start, start+delta, ... up to limit
// (exclusive); ⌈(limit−start)/delta⌉ elements, none when negative.
func buildRange(n *ops.Node, at *RangeAttrs) (ops.Operator, error) {
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return rangeOp{stash: at.StashType == 1}, nil
}

func (op rangeOp) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if err := ops.SameType("Range", in...); err != nil {
		return nil, err
	}
	for i, t := range in {
		if t.Len() != 1 {
			return nil, ops.InputErrorf("Range input %d must be a scalar, has shape %s", i, tensor.ShapeString(t.Shape))
		}
	}
	dt := in[0].DType
	switch dt {
	case tensor.Int16, tensor.Int32, tensor.Int64:
		v := make([]int64, 3)
		for i, t := range in {
			x, _ := t.Int64s()
			v[i] = x[0]
		}
		count, err := rangeCountInt(v[0], v[1], v[2])
		if err != nil {
			return nil, err
		}
		if err := c.Reserve(int64(count) * 16); err != nil { // the values, and their cast
			return nil, err
		}
		out := make([]int64, count)
		if err := c.InPieces(count, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				out[i] = v[0] + int64(i)*v[2]
			}
		}); err != nil {
			return nil, err
		}
		y, err := CastToContext(c, tensor.From([]int{count}, out), dt)
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
		v := make([]float64, 3)
		for i, t := range in {
			v[i] = t.Float64s()[0]
		}
		count, err := rangeCountFloat(v[0], v[1], v[2])
		if err != nil {
			return nil, err
		}
		if err := c.Reserve(int64(count) * 16); err != nil { // the values, and their cast
			return nil, err
		}
		var y *tensor.Tensor
		switch dt {
		case tensor.Float64:
			out := make([]float64, count)
			err = c.InPieces(count, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					out[i] = v[0] + float64(i)*v[2]
				}
			})
			y = tensor.From([]int{count}, out)
		case tensor.Float32:
			out := make([]float32, count)
			s, d := float32(v[0]), float32(v[2])
			err = c.InPieces(count, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					out[i] = s + float32(i)*d
				}
			})
			y = tensor.From([]int{count}, out)
		default:
			y, err = rangeHalf(c, dt, v[0], v[2], count, op.stash)
		}
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{y}, nil
	}
	return nil, ops.InputErrorf("Range does not take %v", dt)
}

// rangeHalf makes an FP16 or BF16 range: start + i·delta in float32
// rounded once (stash), or delta accumulated in the type's precision.
func rangeHalf(c *ops.Context, dt tensor.DataType, start, delta float64, count int, stash bool) (*tensor.Tensor, error) {
	round := func(f float64) float64 {
		if dt == tensor.Float16 {
			return float64(tensor.F16FromFloat64(f).Float32())
		}
		return float64(tensor.BF16FromFloat64(f).Float32())
	}
	vals := make([]float32, count)
	acc := start
	if err := c.InPieces(count, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if stash {
				vals[i] = float32(start) + float32(i)*float32(delta)
			} else {
				vals[i] = float32(acc)
				acc = round(acc + delta)
			}
		}
	}); err != nil {
		return nil, err
	}
	if dt == tensor.Float16 {
		return tensor.From([]int{count}, tensor.Float32ToHalf[tensor.F16](vals)), nil
	}
	return tensor.From([]int{count}, tensor.Float32ToHalf[tensor.BF16](vals)), nil
}

// rangeCountInt returns max(⌈(limit−start)/delta⌉, 0) without overflow.
func rangeCountInt(start, limit, delta int64) (int, error) {
	if delta == 0 {
		return 0, ops.InputErrorf("Range delta is 0")
	}
	diff := new(big.Int).Sub(big.NewInt(limit), big.NewInt(start))
	d := big.NewInt(delta)
	if diff.Sign() != d.Sign() {
		return 0, nil
	}
	diff.Abs(diff)
	d.Abs(d)
	diff.Add(diff, d).Sub(diff, big.NewInt(1)).Quo(diff, d)
	if !diff.IsInt64() || diff.Int64() > tensor.MaxElements {
		return 0, ops.InputErrorf("Range(%d, %d, %d) has more than %d elements", start, limit, delta, tensor.MaxElements)
	}
	return int(diff.Int64()), nil
}

// rangeCountFloat returns max(⌈(limit−start)/delta⌉, 0).
func rangeCountFloat(start, limit, delta float64) (int, error) {
	if delta == 0 {
		return 0, ops.InputErrorf("Range delta is 0")
	}
	c := math.Ceil((limit - start) / delta)
	if math.IsNaN(c) || c > tensor.MaxElements {
		return 0, ops.InputErrorf("Range(%v, %v, %v) has no finite size of at most %d elements", start, limit, delta, tensor.MaxElements)
	}
	return int(max(c, 0)), nil
}
