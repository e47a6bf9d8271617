package oip

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/quantserve/quantserve/tensor"
)

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// AppendInferResponse appends the JSON encoding of r to b. Tensor data is
// written flat, in row-major order; floats use the shortest representation
// that reads back to the same value. JSON has no NaN or infinities: those
// elements are written as null.
func AppendInferResponse(b []byte, r *InferResponse) []byte {
	b = append(b, `{"model_name":`...)
	b = appendString(b, r.ModelName)
	b = append(b, `,"model_version":`...)
	b = appendString(b, r.ModelVersion)
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, r.ID)
	}
	b = append(b, `,"outputs":[`...)
	for i, o := range r.Outputs {
		if i > 0 {
			b = append(b, ',')
		}
		if o.Binary {
			b = AppendBinaryTensorHeader(b, o.Name, o.Tensor)
		} else {
			b = AppendTensor(b, o.Name, o.Tensor)
		}
	}
	return append(b, "]}"...)
}

// AppendTensor appends one {"name","datatype","shape","data"} object.
func AppendTensor(b []byte, name string, t *tensor.Tensor) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	b = append(b, `,"datatype":"`...)
	b = append(b, t.DType.String()...)
	b = append(b, `","shape":[`...)
	for i, d := range t.Shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, `],"data":[`...)
	b = appendData(b, t.Data)
	return append(b, "]}"...)
}

func appendData(b []byte, data any) []byte {
	switch d := data.(type) {
	case []float32:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat32(b, v)
		}
	case []float64:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, v)
		}
	case []tensor.F16:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat32(b, v.Float32())
		}
	case []tensor.BF16:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat32(b, v.Float32())
		}
	case []string:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, v)
		}
	case []bool:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendBool(b, v)
		}
	case []int8:
		b = appendInts(b, d)
	case []int16:
		b = appendInts(b, d)
	case []int32:
		b = appendInts(b, d)
	case []int64:
		b = appendInts(b, d)
	case []uint8:
		b = appendUints(b, d)
	case []uint16:
		b = appendUints(b, d)
	case []uint32:
		b = appendUints(b, d)
	case []uint64:
		b = appendUints(b, d)
	}
	return b
}

// appendFloat and appendJSONFloat32 write a number as JSON: its shortest
// decimal, null for NaN and the infinities.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func appendJSONFloat32(b []byte, f float32) []byte {
	if math.Float32bits(f)&0x7F800000 == 0x7F800000 {
		return append(b, "null"...)
	}
	return appendFloat32(b, f)
}

func appendInts[T int8 | int16 | int32 | int64](b []byte, d []T) []byte {
	for i, v := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return b
}

func appendUints[T uint8 | uint16 | uint32 | uint64](b []byte, d []T) []byte {
	for i, v := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
