package activation

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// Dropout is the Dropout operator, by opset range.
var Dropout = ops.Op{
	ops.Register(ops.Descriptor{Type: "Dropout", Since: 7, Until: 9, Fold: true}, buildDropout7),
	ops.Register(ops.Descriptor{Type: "Dropout", Since: 10, Until: 11, Fold: true}, buildDropout7),
	ops.Register(ops.Descriptor{Type: "Dropout", Since: 12, Fold: true}, buildDropout),
}

// DropoutAttrs are Dropout's attributes before opset 12.
type DropoutAttrs struct {
	Ratio float32 `onnx:"ratio" default:"0.5"`
}

// Dropout12Attrs are Dropout's attributes from opset 12 (ratio and
// training_mode became inputs).
type Dropout12Attrs struct {
	Seed *int64 `onnx:"seed"`
}

// dropout7 implements Dropout of opsets 7 to 11 as inference runs it: the
// identity, and when the node names its second output a mask of ones (of
// the input's type before opset 10, BOOL from it).
type dropout7 struct{ mask, boolMask bool }

func buildDropout7(n *ops.Node, _ *DropoutAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 2); err != nil {
		return nil, err
	}
	return dropout7{mask: hasMask(n), boolMask: n.Opset >= 10}, nil
}

// hasMask reports whether n names its second output, the mask.
func hasMask(n *ops.Node) bool { return len(n.Outputs) > 1 && n.Outputs[1] != "" }

func (d dropout7) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("Dropout does not take %v", x.DType)
	}
	if !d.mask {
		return []*tensor.Tensor{x}, nil
	}
	var m *tensor.Tensor
	var err error
	if d.boolMask {
		m, err = dropoutMask(c, x.Shape)
	} else {
		m, err = dropoutOnes(c, x)
	}
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{x, m}, nil
}

// dropout implements Dropout from opset 12: ratio and training_mode are
// inputs. Without training_mode (or with it false), or with ratio 0, the
// output is the input and the mask all true. Training mode with a
// nonzero ratio would drop random elements: quantserve does not run
// random operators, so that is refused (at load when both inputs are
// constants).
type dropout struct{ mask bool }

func buildDropout(n *ops.Node, _ *Dropout12Attrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 3, 1, 2); err != nil {
		return nil, err
	}
	if training := n.Const(2); training != nil { // training_mode known at load
		ratio := n.Const(1)
		if ratio != nil || n.Inputs[1] == "" { // and the ratio too (or absent)
			if err := dropoutCheck(ratio, training); err != nil {
				return nil, err
			}
		}
	}
	return dropout{mask: hasMask(n)}, nil
}

func (d dropout) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	if !x.DType.IsFloat() {
		return nil, ops.InputErrorf("Dropout does not take %v", x.DType)
	}
	if err := dropoutCheck(ops.Optional(in, 1), ops.Optional(in, 2)); err != nil {
		return nil, err
	}
	if !d.mask {
		return []*tensor.Tensor{x}, nil
	}
	m, err := dropoutMask(c, x.Shape)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{x, m}, nil
}

// dropoutCheck refuses training mode with a nonzero ratio (0.5 when
// absent), and inputs of the wrong kind.
func dropoutCheck(ratio, training *tensor.Tensor) error {
	if training == nil {
		return nil
	}
	tb, ok := training.Data.([]bool)
	if !ok || len(tb) != 1 {
		return ops.InputErrorf("Dropout training_mode must be a BOOL scalar, got %v%s", training.DType, tensor.ShapeString(training.Shape))
	}
	if !tb[0] {
		return nil
	}
	r := 0.5
	if ratio != nil {
		if !ratio.DType.IsFloat() || ratio.Len() != 1 {
			return ops.InputErrorf("Dropout ratio must be a floating-point scalar, got %v%s", ratio.DType, tensor.ShapeString(ratio.Shape))
		}
		r = ratio.Float64s()[0]
	}
	if r == 0 {
		return nil
	}
	return ops.Unsupportedf("Dropout in training mode with ratio %v (random operators are not run)", r)
}

// dropoutMask is the mask from opset 10: all true.
func dropoutMask(c *ops.Context, shape []int) (*tensor.Tensor, error) {
	n, _ := tensor.NumElements(shape) // the input's shape: already valid
	m, err := filled(c, n, true)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: tensor.Bool, Shape: shape, Data: m}, nil
}

// dropoutOnes is the opset 7–9 mask: ones of x's type.
func dropoutOnes(c *ops.Context, x *tensor.Tensor) (*tensor.Tensor, error) {
	var out any
	var err error
	switch x.Data.(type) {
	case []float32:
		out, err = filled(c, x.Len(), float32(1))
	case []float64:
		out, err = filled(c, x.Len(), float64(1))
	case []tensor.F16:
		out, err = filled(c, x.Len(), tensor.F16From(1))
	case []tensor.BF16:
		out, err = filled(c, x.Len(), tensor.BF16From(1))
	}
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{DType: x.DType, Shape: x.Shape, Data: out}, nil
}

// filled returns n copies of v, piece by piece under the request.
func filled[T any](c *ops.Context, n int, v T) ([]T, error) {
	r := make([]T, n)
	err := c.InPieces(n, func(lo, hi int) {
		d := r[lo:hi]
		for i := range d {
			d[i] = v
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
