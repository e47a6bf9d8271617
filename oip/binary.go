package oip

import (
	"encoding/binary"

	"github.com/quantserve/quantserve/tensor"
)

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
	b = appendInt(b, int64(BinarySize(t)))
	return append(b, "}}"...)
}

// BinarySize returns the bytes t takes in Triton's binary tensor data:
// its elements little-endian, BOOL one byte each, BYTES each as a 4-byte
// little-endian length and the bytes.
func BinarySize(t *tensor.Tensor) int {
	if s, ok := t.Data.([]string); ok {
		n := 0
		for _, v := range s {
			n += 4 + len(v)
		}
		return n
	}
	return t.Len() * t.DType.Size()
}

// AppendBinaryTensor appends t's elements as Triton's binary tensor data.
func AppendBinaryTensor(b []byte, t *tensor.Tensor) []byte {
	if s, ok := t.Data.([]string); ok {
		for _, v := range s {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
		return b
	}
	return tensor.AppendLittleEndian(b, t)
}

// bytesFromBinary reads n BYTES elements that fill raw exactly.
func bytesFromBinary(raw []byte, n int) ([]string, error) {
	out := make([]string, 0, min(n, len(raw)/4))
	for len(out) < n {
		if len(raw) < 4 {
			return nil, semantic("BYTES element %d: the data ends inside its length", len(out))
		}
		l := binary.LittleEndian.Uint32(raw)
		raw = raw[4:]
		if uint64(l) > uint64(len(raw)) {
			return nil, semantic("BYTES element %d: length %d runs past the data", len(out), l)
		}
		out = append(out, string(raw[:l]))
		raw = raw[l:]
	}
	if len(raw) != 0 {
		return nil, semantic("%d bytes after the last BYTES element", len(raw))
	}
	return out, nil
}
