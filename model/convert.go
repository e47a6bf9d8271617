package model

import (
	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// DataTypeFromONNX is onnx.DataTypeFromONNX.
func DataTypeFromONNX(dt onnxpb.DataType) (tensor.DataType, error) { return onnx.DataTypeFromONNX(dt) }

// DataTypeToONNX is onnx.DataTypeToONNX.
func DataTypeToONNX(dt tensor.DataType) onnxpb.DataType { return onnx.DataTypeToONNX(dt) }

// TensorFromONNX is onnx.TensorFromONNX.
func TensorFromONNX(p *onnxpb.Tensor) (*tensor.Tensor, error) { return onnx.TensorFromONNX(p) }

// TensorToONNX is onnx.TensorToONNX.
func TensorToONNX(name string, t *tensor.Tensor) *onnxpb.Tensor { return onnx.TensorToONNX(name, t) }

// convert returns src's values converted to D.
func convert[D, S tensor.Numeric](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}
