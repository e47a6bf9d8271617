package arith

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/elem"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "BitShift", Since: 11, Fold: true}, buildBitShift)
	for _, op := range []string{"BitwiseAnd", "BitwiseOr", "BitwiseXor"} {
		ops.Register(ops.Descriptor{Type: op, Since: 18, Fold: true}, bitwiseBuilder(op))
	}
	ops.Register(ops.Descriptor{Type: "BitwiseNot", Since: 18, Fold: true}, buildBitwiseNot)
}

// BitShiftAttrs are BitShift's attributes.
type BitShiftAttrs struct {
	Direction string `onnx:"direction"`
}

// bitShift shifts unsigned integers; shifting by the width or more gives
// 0.
type bitShift struct{ left bool }

func buildBitShift(n *ops.Node, at *BitShiftAttrs) (ops.Operator, error) {
	if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	var left bool
	switch at.Direction {
	case "LEFT":
		left = true
	case "RIGHT":
	default:
		return nil, fmt.Errorf("BitShift direction %q is neither LEFT nor RIGHT", at.Direction)
	}
	return bitShift{left: left}, nil
}

func (s bitShift) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b := in[0], in[1]
	if err := ops.SameType("BitShift", a, b); err != nil {
		return nil, err
	}
	var t *tensor.Tensor
	var err error
	switch ad := a.Data.(type) {
	case []uint8:
		t, err = shift(c, ad, b.Data.([]uint8), a.Shape, b.Shape, s.left)
	case []uint16:
		t, err = shift(c, ad, b.Data.([]uint16), a.Shape, b.Shape, s.left)
	case []uint32:
		t, err = shift(c, ad, b.Data.([]uint32), a.Shape, b.Shape, s.left)
	case []uint64:
		t, err = shift(c, ad, b.Data.([]uint64), a.Shape, b.Shape, s.left)
	default:
		return nil, ops.InputErrorf("BitShift does not take %v", a.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

func shift[T uint8 | uint16 | uint32 | uint64](c *ops.Context, a, b []T, as, bs []int, left bool) (*tensor.Tensor, error) {
	f := func(x, s T) T { return x >> s }
	if left {
		f = func(x, s T) T { return x << s }
	}
	shape, r, err := elem.MapFunc(c, a, b, as, bs, f)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// bitwise is BitwiseAnd, BitwiseOr or BitwiseXor on integers that
// broadcast together.
type bitwise struct{ op string }

func bitwiseBuilder(op string) func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	return func(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		return bitwise{op: op}, nil
	}
}

func (w bitwise) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, b := in[0], in[1]
	if err := ops.SameType(w.op, a, b); err != nil {
		return nil, err
	}
	var t *tensor.Tensor
	var err error
	switch ad := a.Data.(type) {
	case []int8:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]int8), a.Shape, b.Shape)
	case []uint8:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]uint8), a.Shape, b.Shape)
	case []int16:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]int16), a.Shape, b.Shape)
	case []uint16:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]uint16), a.Shape, b.Shape)
	case []int32:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]int32), a.Shape, b.Shape)
	case []uint32:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]uint32), a.Shape, b.Shape)
	case []int64:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]int64), a.Shape, b.Shape)
	case []uint64:
		t, err = bitwiseOf(c, w.op, ad, b.Data.([]uint64), a.Shape, b.Shape)
	default:
		return nil, ops.InputErrorf("%s does not take %v", w.op, a.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}

func bitwiseOf[T tensor.Integer](c *ops.Context, op string, a, b []T, as, bs []int) (*tensor.Tensor, error) {
	var f func(x, y T) T
	switch op {
	case "BitwiseAnd":
		f = func(x, y T) T { return x & y }
	case "BitwiseOr":
		f = func(x, y T) T { return x | y }
	default:
		f = func(x, y T) T { return x ^ y }
	}
	shape, r, err := elem.MapFunc(c, a, b, as, bs, f)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.DTypeOf[T](), Shape: shape, Data: r}, nil
}

// bitwiseNot flips every bit of an integer tensor.
type bitwiseNot struct{}

func buildBitwiseNot(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	return bitwiseNot{}, nil
}

func (bitwiseNot) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	var out any
	var err error
	switch d := x.Data.(type) {
	case []int8:
		out, err = bitNot(c, d)
	case []uint8:
		out, err = bitNot(c, d)
	case []int16:
		out, err = bitNot(c, d)
	case []uint16:
		out, err = bitNot(c, d)
	case []int32:
		out, err = bitNot(c, d)
	case []uint32:
		out, err = bitNot(c, d)
	case []int64:
		out, err = bitNot(c, d)
	case []uint64:
		out, err = bitNot(c, d)
	default:
		return nil, ops.InputErrorf("BitwiseNot does not take %v", x.DType)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{{DType: x.DType, Shape: x.Shape, Data: out}}, nil
}

func bitNot[T tensor.Integer](c *ops.Context, x []T) ([]T, error) {
	r := make([]T, len(x))
	err := c.InPieces(len(x), func(lo, hi int) {
		dst, src := r[lo:hi], x[lo:hi]
		for i, v := range src {
			dst[i] = ^v
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
