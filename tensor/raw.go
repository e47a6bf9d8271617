package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// nativeLE tells whether this machine stores numbers little-endian, as
// every platform quantserve ships for does (amd64, arm64): then a slice
// of numbers already is its little-endian bytes, and copies as such.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// memoryOf returns the bytes under a slice of fixed-size numbers (not
// bool, whose byte values are normalized, nor string), or nil.
func memoryOf(data any) []byte {
	switch d := data.(type) {
	case []uint8:
		return d
	case []int8:
		return bytesOf(d)
	case []uint16:
		return bytesOf(d)
	case []int16:
		return bytesOf(d)
	case []F16:
		return bytesOf(d)
	case []BF16:
		return bytesOf(d)
	case []uint32:
		return bytesOf(d)
	case []int32:
		return bytesOf(d)
	case []float32:
		return bytesOf(d)
	case []uint64:
		return bytesOf(d)
	case []int64:
		return bytesOf(d)
	case []float64:
		return bytesOf(d)
	}
	return nil
}

// bytesOf views the memory of d as bytes.
func bytesOf[T int8 | uint16 | int16 | F16 | BF16 | uint32 | int32 | float32 | uint64 | int64 | float64](d []T) []byte {
	if len(d) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), len(d)*int(unsafe.Sizeof(d[0])))
}

// FromLittleEndian returns n elements of dt read from raw, which holds
// them little-endian, n·dt.Size() bytes, BOOL one byte each (nonzero is
// true): the layout of ONNX raw_data and of Triton's binary tensor data.
func FromLittleEndian(dt DataType, raw []byte, n int) any {
	raw = raw[:n*dt.Size()]
	le := binary.LittleEndian
	out, _ := MakeSlice(dt, n)
	if m := memoryOf(out); nativeLE && m != nil {
		copy(m, raw)
		return out
	}
	switch d := out.(type) {
	case []bool:
		for i := range d {
			d[i] = raw[i] != 0
		}
	case []uint8:
		copy(d, raw)
	case []int8:
		for i := range d {
			d[i] = int8(raw[i])
		}
	case []uint16:
		for i := range d {
			d[i] = le.Uint16(raw[2*i:])
		}
	case []int16:
		for i := range d {
			d[i] = int16(le.Uint16(raw[2*i:]))
		}
	case []uint32:
		for i := range d {
			d[i] = le.Uint32(raw[4*i:])
		}
	case []int32:
		for i := range d {
			d[i] = int32(le.Uint32(raw[4*i:]))
		}
	case []uint64:
		for i := range d {
			d[i] = le.Uint64(raw[8*i:])
		}
	case []int64:
		for i := range d {
			d[i] = int64(le.Uint64(raw[8*i:]))
		}
	case []float32:
		for i := range d {
			d[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case []float64:
		for i := range d {
			d[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case []F16:
		for i := range d {
			d[i] = F16(le.Uint16(raw[2*i:]))
		}
	case []BF16:
		for i := range d {
			d[i] = BF16(le.Uint16(raw[2*i:]))
		}
	}
	return out
}

// AppendLittleEndian appends t's elements in FromLittleEndian's layout.
func AppendLittleEndian(b []byte, t *Tensor) []byte {
	if m := memoryOf(t.Data); nativeLE && m != nil {
		return append(b, m...)
	}
	le := binary.LittleEndian
	switch d := t.Data.(type) {
	case []bool:
		for _, v := range d {
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	case []uint8:
		b = append(b, d...)
	case []int8:
		for _, v := range d {
			b = append(b, byte(v))
		}
	case []uint16:
		for _, v := range d {
			b = le.AppendUint16(b, v)
		}
	case []int16:
		for _, v := range d {
			b = le.AppendUint16(b, uint16(v))
		}
	case []uint32:
		for _, v := range d {
			b = le.AppendUint32(b, v)
		}
	case []int32:
		for _, v := range d {
			b = le.AppendUint32(b, uint32(v))
		}
	case []uint64:
		for _, v := range d {
			b = le.AppendUint64(b, v)
		}
	case []int64:
		for _, v := range d {
			b = le.AppendUint64(b, uint64(v))
		}
	case []float32:
		for _, v := range d {
			b = le.AppendUint32(b, math.Float32bits(v))
		}
	case []float64:
		for _, v := range d {
			b = le.AppendUint64(b, math.Float64bits(v))
		}
	case []F16:
		for _, v := range d {
			b = le.AppendUint16(b, uint16(v))
		}
	case []BF16:
		for _, v := range d {
			b = le.AppendUint16(b, uint16(v))
		}
	}
	return b
}
