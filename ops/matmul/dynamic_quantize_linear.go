package matmul

import (
	"math"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "DynamicQuantizeLinear", Since: 11, Fold: true}, buildDynamicQuantizeLinear)
}

// dynamicQuantizeLinear is a compiled DynamicQuantizeLinear: x quantized
// to UINT8 over [min(x, 0), max(x, 0)], with the scale and zero point it
// chose (ONNX Runtime's dynamic quantization of activations).
type dynamicQuantizeLinear struct{}

func buildDynamicQuantizeLinear(n *ops.Node, _ *ops.NoAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 3, 3); err != nil {
		return nil, err
	}
	return dynamicQuantizeLinear{}, nil
}

func (dynamicQuantizeLinear) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	xs, ok := in[0].Data.([]float32)
	if !ok {
		return nil, ops.InputErrorf("DynamicQuantizeLinear takes FP32, got %v", in[0].DType)
	}
	var lo, hi float32
	err := c.InPieces(len(xs), func(p, q int) {
		for _, v := range xs[p:q] {
			lo, hi = min(lo, v), max(hi, v)
		}
	})
	if err != nil {
		return nil, err
	}
	scale := (hi - lo) / 255
	var zp float32
	if scale != 0 {
		zp = float32(min(max(math.RoundToEven(float64(0-lo/scale)), 0), 255))
	}
	y := make([]uint8, len(xs))
	if scale != 0 {
		err := c.InPieces(len(xs), func(p, q int) {
			for i := p; i < q; i++ {
				y[i] = uint8(min(max(math.RoundToEven(float64(xs[i]/scale))+float64(zp), 0), 255))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return []*tensor.Tensor{
		{DType: tensor.Uint8, Shape: in[0].Shape, Data: y},
		tensor.Scalar(scale),
		tensor.Scalar(uint8(zp)),
	}, nil
}
