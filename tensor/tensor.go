package tensor

import (
	"errors"
	"fmt"
	"math"
)

// Tensor is a dense, row-major tensor. Data holds a slice whose Go element
// type matches DType: []bool, []uint8, []uint16, []uint32, []uint64, []int8,
// []int16, []int32, []int64, []float32, []float64, []F16, []BF16 or
// []string, of length NumElements(Shape).
type Tensor struct {
	DType DataType
	Shape []int
	Data  any
}

// Numeric is the set of Go element types that arithmetic applies to
// directly. F16 and BF16 are not among them: they are converted to
// float32 to compute.
type Numeric interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64 | float32 | float64
}

// Integer is the set of Go integer element types.
type Integer interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64
}

// Float is the set of Go floating-point element types computed on directly.
type Float interface{ float32 | float64 }

// Elem is the set of Go element types a Tensor can hold.
type Elem interface {
	Numeric | bool | F16 | BF16 | string
}

// ErrTooLarge reports a shape whose element count overflows or exceeds a
// caller's limit.
var ErrTooLarge = errors.New("tensor: too many elements")

// MaxElements bounds any tensor quantserve creates; shapes beyond it are
// refused before allocation.
const MaxElements = 1 << 31

// NumElements returns the product of shape, or an error if a dimension is
// negative or the product exceeds MaxElements. It never overflows.
func NumElements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor: negative dimension %d in shape %v", d, shape)
		}
		if d == 0 {
			n = 0
			continue
		}
		if n > MaxElements/d {
			return 0, fmt.Errorf("%w: shape %v has more than %d elements", ErrTooLarge, shape, MaxElements)
		}
		n *= d
	}
	if n > MaxElements {
		return 0, fmt.Errorf("%w: shape %v has more than %d elements", ErrTooLarge, shape, MaxElements)
	}
	return n, nil
}

// New returns a zeroed tensor of the given type and shape.
func New(dt DataType, shape []int) (*Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	data, err := MakeSlice(dt, n)
	if err != nil {
		return nil, err
	}
	return &Tensor{DType: dt, Shape: append([]int(nil), shape...), Data: data}, nil
}

// MakeSlice returns a zeroed slice of n elements of type dt.
func MakeSlice(dt DataType, n int) (any, error) {
	switch dt {
	case Bool:
		return make([]bool, n), nil
	case Uint8:
		return make([]uint8, n), nil
	case Uint16:
		return make([]uint16, n), nil
	case Uint32:
		return make([]uint32, n), nil
	case Uint64:
		return make([]uint64, n), nil
	case Int8:
		return make([]int8, n), nil
	case Int16:
		return make([]int16, n), nil
	case Int32:
		return make([]int32, n), nil
	case Int64:
		return make([]int64, n), nil
	case Float32:
		return make([]float32, n), nil
	case Float64:
		return make([]float64, n), nil
	case Float16:
		return make([]F16, n), nil
	case BFloat16:
		return make([]BF16, n), nil
	case String:
		return make([]string, n), nil
	}
	return nil, fmt.Errorf("tensor: unsupported data type %v", dt)
}

// DTypeOf returns the DataType whose slices have Go element type T.
func DTypeOf[T Elem]() DataType {
	var z T
	switch any(z).(type) {
	case bool:
		return Bool
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case float32:
		return Float32
	case float64:
		return Float64
	case F16:
		return Float16
	case BF16:
		return BFloat16
	case string:
		return String
	}
	return Invalid
}

// From wraps data (not copied) as a tensor of the given shape. It panics if
// len(data) does not match the shape: callers construct both.
func From[T Elem](shape []int, data []T) *Tensor {
	n, err := NumElements(shape)
	if err != nil || n != len(data) {
		panic(fmt.Sprintf("tensor.From: %d elements for shape %v", len(data), shape))
	}
	return &Tensor{DType: DTypeOf[T](), Shape: append([]int(nil), shape...), Data: data}
}

// Scalar returns a rank-0 tensor holding v.
func Scalar[T Elem](v T) *Tensor { return From(nil, []T{v}) }

// Len returns the number of elements in t.
func (t *Tensor) Len() int {
	switch d := t.Data.(type) {
	case []bool:
		return len(d)
	case []uint8:
		return len(d)
	case []uint16:
		return len(d)
	case []uint32:
		return len(d)
	case []uint64:
		return len(d)
	case []int8:
		return len(d)
	case []int16:
		return len(d)
	case []int32:
		return len(d)
	case []int64:
		return len(d)
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []F16:
		return len(d)
	case []BF16:
		return len(d)
	case []string:
		return len(d)
	}
	return 0
}

// Rank returns len(t.Shape).
func (t *Tensor) Rank() int { return len(t.Shape) }

// Reshaped returns a tensor sharing t's data with a new shape of the same
// element count.
func (t *Tensor) Reshaped(shape []int) (*Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n != t.Len() {
		return nil, fmt.Errorf("tensor: cannot reshape %v (%d elements) to %v (%d elements)", t.Shape, t.Len(), shape, n)
	}
	return &Tensor{DType: t.DType, Shape: append([]int(nil), shape...), Data: t.Data}, nil
}

// Float64s returns t's elements converted to float64. Bool is 0 or 1;
// strings are 0.
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	switch d := t.Data.(type) {
	case []bool:
		for i, v := range d {
			if v {
				out[i] = 1
			}
		}
	case []uint8:
		convertInto(out, d)
	case []uint16:
		convertInto(out, d)
	case []uint32:
		convertInto(out, d)
	case []uint64:
		convertInto(out, d)
	case []int8:
		convertInto(out, d)
	case []int16:
		convertInto(out, d)
	case []int32:
		convertInto(out, d)
	case []int64:
		convertInto(out, d)
	case []float32:
		convertInto(out, d)
	case []float64:
		copy(out, d)
	case []F16:
		for i, v := range d {
			out[i] = float64(v.Float32())
		}
	case []BF16:
		for i, v := range d {
			out[i] = float64(v.Float32())
		}
	}
	return out
}

// Int64s returns t's elements as int64 if t has an integer type.
func (t *Tensor) Int64s() ([]int64, error) {
	out := make([]int64, t.Len())
	switch d := t.Data.(type) {
	case []uint8:
		convertInto(out, d)
	case []uint16:
		convertInto(out, d)
	case []uint32:
		convertInto(out, d)
	case []uint64:
		for i, v := range d {
			if v > math.MaxInt64 {
				return nil, fmt.Errorf("tensor: value %d does not fit int64", v)
			}
			out[i] = int64(v)
		}
	case []int8:
		convertInto(out, d)
	case []int16:
		convertInto(out, d)
	case []int32:
		convertInto(out, d)
	case []int64:
		copy(out, d)
	default:
		return nil, fmt.Errorf("tensor: %v is not an integer type", t.DType)
	}
	return out, nil
}

func convertInto[D, S Numeric](dst []D, src []S) {
	for i, v := range src {
		dst[i] = D(v)
	}
}

// Clone returns a deep copy of t.
func (t *Tensor) Clone() *Tensor {
	c, err := New(t.DType, t.Shape)
	if err != nil {
		panic(err) // t exists, so its shape is valid
	}
	CopyData(c.Data, t.Data)
	return c
}

// CopyData copies src into dst, two slices of the same element type.
func CopyData(dst, src any) {
	switch d := dst.(type) {
	case []bool:
		copy(d, src.([]bool))
	case []uint8:
		copy(d, src.([]uint8))
	case []uint16:
		copy(d, src.([]uint16))
	case []uint32:
		copy(d, src.([]uint32))
	case []uint64:
		copy(d, src.([]uint64))
	case []int8:
		copy(d, src.([]int8))
	case []int16:
		copy(d, src.([]int16))
	case []int32:
		copy(d, src.([]int32))
	case []int64:
		copy(d, src.([]int64))
	case []float32:
		copy(d, src.([]float32))
	case []float64:
		copy(d, src.([]float64))
	case []F16:
		copy(d, src.([]F16))
	case []BF16:
		copy(d, src.([]BF16))
	case []string:
		copy(d, src.([]string))
	}
}

// ShapeString formats a shape as [a,b,c].
func ShapeString(shape []int) string {
	s := "["
	for i, d := range shape {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(d)
	}
	return s + "]"
}

// BroadcastStrides returns the element strides of a tensor of the given
// shape laid out inside out (right-aligned, numpy broadcasting), with 0 for
// the dimensions it is broadcast along. Walking out's indices with these
// strides visits the element each output position reads.
func BroadcastStrides(shape, out []int) []int {
	st := make([]int, len(out))
	s := 1
	for i := len(out) - 1; i >= 0; i-- {
		j := i - (len(out) - len(shape))
		if j < 0 {
			continue
		}
		if shape[j] != 1 {
			st[i] = s
		}
		s *= shape[j]
	}
	return st
}
