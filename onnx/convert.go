package onnx

import (
	"fmt"

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// DataTypeFromONNX maps an ONNX element type to the tensor type that holds
// it, or an ErrUnsupported error naming the type.
func DataTypeFromONNX(dt onnxpb.DataType) (tensor.DataType, error) {
	switch dt {
	case onnxpb.Float:
		return tensor.Float32, nil
	case onnxpb.Double:
		return tensor.Float64, nil
	case onnxpb.Int8:
		return tensor.Int8, nil
	case onnxpb.Uint8:
		return tensor.Uint8, nil
	case onnxpb.Int16:
		return tensor.Int16, nil
	case onnxpb.Uint16:
		return tensor.Uint16, nil
	case onnxpb.Int32:
		return tensor.Int32, nil
	case onnxpb.Uint32:
		return tensor.Uint32, nil
	case onnxpb.Int64:
		return tensor.Int64, nil
	case onnxpb.Uint64:
		return tensor.Uint64, nil
	case onnxpb.Bool:
		return tensor.Bool, nil
	case onnxpb.Float16:
		return tensor.Float16, nil
	case onnxpb.BFloat16:
		return tensor.BFloat16, nil
	case onnxpb.String:
		return tensor.String, nil
	}
	return tensor.Invalid, Unsupportedf("data type %v (the Open Inference Protocol cannot carry it)", dt)
}

// DataTypeToONNX is the inverse of DataTypeFromONNX.
func DataTypeToONNX(dt tensor.DataType) onnxpb.DataType {
	switch dt {
	case tensor.Float32:
		return onnxpb.Float
	case tensor.Float64:
		return onnxpb.Double
	case tensor.Int8:
		return onnxpb.Int8
	case tensor.Uint8:
		return onnxpb.Uint8
	case tensor.Int16:
		return onnxpb.Int16
	case tensor.Uint16:
		return onnxpb.Uint16
	case tensor.Int32:
		return onnxpb.Int32
	case tensor.Uint32:
		return onnxpb.Uint32
	case tensor.Int64:
		return onnxpb.Int64
	case tensor.Uint64:
		return onnxpb.Uint64
	case tensor.Bool:
		return onnxpb.Bool
	case tensor.Float16:
		return onnxpb.Float16
	case tensor.BFloat16:
		return onnxpb.BFloat16
	case tensor.String:
		return onnxpb.String
	}
	return onnxpb.Undefined
}

// TensorFromONNX converts a TensorProto to a tensor, reading raw_data or
// the typed field the type is stored in.
func TensorFromONNX(p *onnxpb.Tensor) (*tensor.Tensor, error) {
	if p.External {
		return nil, Unsupportedf("tensor %q stores its data in an external file", p.Name)
	}
	if p.HasSegment {
		return nil, Unsupportedf("tensor %q is segmented", p.Name)
	}
	dt, err := DataTypeFromONNX(p.DataType)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", p.Name, err)
	}
	shape := make([]int, len(p.Dims))
	for i, d := range p.Dims {
		if d < 0 || d > tensor.MaxElements {
			return nil, fmt.Errorf("model: tensor %q has invalid dimension %d", p.Name, d)
		}
		shape[i] = int(d)
	}
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, fmt.Errorf("model: tensor %q: %w", p.Name, err)
	}
	t := &tensor.Tensor{DType: dt, Shape: shape}
	if dt == tensor.String {
		if len(p.StringData) != n {
			return nil, fmt.Errorf("model: tensor %q: has %d strings, shape %v needs %d", p.Name, len(p.StringData), shape, n)
		}
		s := make([]string, n)
		for i, b := range p.StringData {
			s[i] = string(b)
		}
		t.Data = s
		return t, nil
	}
	if p.HasRawData {
		if len(p.RawData) != n*dt.Size() {
			return nil, fmt.Errorf("model: tensor %q: raw_data has %d bytes, shape %v of %v needs %d", p.Name, len(p.RawData), shape, dt, n*dt.Size())
		}
		t.Data = tensor.FromLittleEndian(dt, p.RawData, n)
		return t, nil
	}
	var have int
	switch dt {
	case tensor.Float32:
		have = len(p.FloatData)
	case tensor.Float64:
		have = len(p.DoubleData)
	case tensor.Int64:
		have = len(p.Int64Data)
	case tensor.Uint32, tensor.Uint64:
		have = len(p.Uint64Data)
	default:
		have = len(p.Int32Data)
	}
	if have != n {
		return nil, fmt.Errorf("model: tensor %q: has %d values, shape %v needs %d", p.Name, have, shape, n)
	}
	switch dt {
	case tensor.Float32:
		t.Data = append([]float32(nil), p.FloatData...)
	case tensor.Float64:
		t.Data = append([]float64(nil), p.DoubleData...)
	case tensor.Int64:
		t.Data = append([]int64(nil), p.Int64Data...)
	case tensor.Uint32:
		t.Data = convert[uint32](p.Uint64Data)
	case tensor.Uint64:
		t.Data = append([]uint64(nil), p.Uint64Data...)
	case tensor.Int32:
		t.Data = append([]int32(nil), p.Int32Data...)
	case tensor.Int16:
		t.Data = convert[int16](p.Int32Data)
	case tensor.Uint16:
		t.Data = convert[uint16](p.Int32Data)
	case tensor.Int8:
		t.Data = convert[int8](p.Int32Data)
	case tensor.Uint8:
		t.Data = convert[uint8](p.Int32Data)
	case tensor.Bool:
		b := make([]bool, n)
		for i, v := range p.Int32Data {
			b[i] = v != 0
		}
		t.Data = b
	case tensor.Float16: // int32_data holds the bits
		h := make([]tensor.F16, n)
		for i, v := range p.Int32Data {
			h[i] = tensor.F16(v)
		}
		t.Data = h
	case tensor.BFloat16:
		h := make([]tensor.BF16, n)
		for i, v := range p.Int32Data {
			h[i] = tensor.BF16(v)
		}
		t.Data = h
	}
	return t, nil
}

func convert[D, S tensor.Numeric](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}

// TensorToONNX converts t to a TensorProto with raw_data (string_data for
// BYTES).
func TensorToONNX(name string, t *tensor.Tensor) *onnxpb.Tensor {
	p := &onnxpb.Tensor{Name: name, DataType: DataTypeToONNX(t.DType), HasRawData: true}
	for _, d := range t.Shape {
		p.Dims = append(p.Dims, int64(d))
	}
	if s, ok := t.Data.([]string); ok {
		p.HasRawData = false
		for _, v := range s {
			p.StringData = append(p.StringData, []byte(v))
		}
		return p
	}
	raw := tensor.AppendLittleEndian(make([]byte, 0, t.Len()*t.DType.Size()), t)
	p.RawData = raw
	return p
}
