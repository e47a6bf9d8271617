package opstest

import (
	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// AttrInt is the INT attribute name = v.
func AttrInt(name string, v int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInt, I: v}
}

// AttrInts is the INTS attribute name = v.
func AttrInts(name string, v ...int64) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrInts, Ints: v}
}

// AttrFloat is the FLOAT attribute name = v.
func AttrFloat(name string, v float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloat, F: v}
}

// AttrFloats is the FLOATS attribute name = v.
func AttrFloats(name string, v ...float32) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrFloats, Floats: v}
}

// AttrString is the STRING attribute name = v.
func AttrString(name, v string) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrString, S: []byte(v)}
}

// AttrStrings is the STRINGS attribute name = v.
func AttrStrings(name string, v ...string) *onnxpb.Attribute {
	a := &onnxpb.Attribute{Name: name, Type: onnxpb.AttrStrings}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}

// AttrTensor is the TENSOR attribute name = t.
func AttrTensor(name string, t *tensor.Tensor) *onnxpb.Attribute {
	return &onnxpb.Attribute{Name: name, Type: onnxpb.AttrTensor, T: onnx.TensorToONNX(name, t)}
}
