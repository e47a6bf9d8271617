package oip

import "github.com/quantserve/quantserve/tensor"

// AppendBinaryTensorHeader appends the JSON of an output whose data
// follows the header as bytes: {"name","datatype","shape","parameters":
// {"binary_data_size": N}}.
func AppendBinaryTensorHeader(b []byte, name string, t *tensor.Tensor) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	b = append(b, `,"datatype":"`...)
	b = append(b, t.DType.String()...)
	b = append(b, `","shape":[`...)
	for i, d := range t.Shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, int64(d))
	}
	b = append(b, `],"parameters":{"binary_data_size":`...)
	b = appendInt(b, int64(t.Len()*t.DType.Size()))
	return append(b, "}}"...)
}
