package oip

import (
	"errors"
	"math"

	"github.com/quantserve/quantserve/tensor"
)

// The data array of a request tensor: each datatype's elements, flat or
// nested as the shape says.

// tensorData decodes the data array at d.i for the given datatype and
// shape into a typed slice.
func (d *decoder) tensorData(idx int, name, dtName string, shape []int) (any, error) {
	// The tensor's label is formatted only for an error.
	dt, ok := tensor.ParseDataType(dtName)
	if !ok {
		return nil, semantic("%s: unsupported datatype %q (supported: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES)", label(idx, name), dtName)
	}
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, semantic("%s: shape %s: %v", label(idx, name), tensor.ShapeString(shape), err)
	}
	// Each element takes at least two bytes ("1,"), so a body cannot hold
	// more than this many: refuse before allocating for a lying shape.
	if limit := (len(d.b)-d.i)/2 + 1; n > limit {
		return nil, semantic("%s: shape %s needs %d elements, more than the body holds", label(idx, name), tensor.ShapeString(shape), n)
	}
	var data any
	switch dt {
	case tensor.Float32:
		data, err = decodeArrayFast(d, shape, n, func(d *decoder) (float32, error) {
			f, err := d.float(32)
			return float32(f), err
		}, floatRun[float32])
	case tensor.Float64:
		data, err = decodeArrayFast(d, shape, n, func(d *decoder) (float64, error) { return d.float(64) }, floatRun[float64])
	case tensor.Float16:
		data, err = decodeArray(d, shape, n, func(d *decoder) (tensor.F16, error) {
			h, err := d.half(f16Format)
			return tensor.F16(h), err
		})
	case tensor.BFloat16:
		data, err = decodeArray(d, shape, n, func(d *decoder) (tensor.BF16, error) {
			h, err := d.half(bf16Format)
			return tensor.BF16(h), err
		})
	case tensor.String:
		data, err = decodeArray(d, shape, n, (*decoder).str)
	case tensor.Int8:
		data, err = decodeArray(d, shape, n, intParser[int8](math.MinInt8, math.MaxInt8))
	case tensor.Int16:
		data, err = decodeArray(d, shape, n, intParser[int16](math.MinInt16, math.MaxInt16))
	case tensor.Int32:
		data, err = decodeArray(d, shape, n, intParser[int32](math.MinInt32, math.MaxInt32))
	case tensor.Int64:
		data, err = decodeArray(d, shape, n, intParser[int64](math.MinInt64, math.MaxInt64))
	case tensor.Uint8:
		data, err = decodeArray(d, shape, n, intParser[uint8](0, math.MaxUint8))
	case tensor.Uint16:
		data, err = decodeArray(d, shape, n, intParser[uint16](0, math.MaxUint16))
	case tensor.Uint32:
		data, err = decodeArray(d, shape, n, intParser[uint32](0, math.MaxUint32))
	case tensor.Uint64:
		data, err = decodeArray(d, shape, n, func(d *decoder) (uint64, error) {
			d.ws()
			lit, err := d.number()
			if err != nil {
				return 0, err
			}
			neg, mag, err := lit.integer()
			if err == nil && neg && mag != 0 {
				err = errRange
			}
			return mag, d.elemErr(err, lit, "UINT64")
		})
	case tensor.Bool:
		data, err = decodeArray(d, shape, n, (*decoder).boolean)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Offset < 0 {
			e.Msg = label(idx, name) + ": " + e.Msg
		}
		return nil, err
	}
	return data, nil
}

func intParser[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32](lo int64, hi uint64) func(d *decoder) (T, error) {
	name := tensor.DTypeOf[T]().String()
	return func(d *decoder) (T, error) {
		d.ws()
		lit, err := d.number()
		if err != nil {
			return 0, err
		}
		neg, mag, err := lit.integer()
		var v int64
		if err == nil {
			v, err = toInt(neg, mag, lo, hi)
		}
		return T(v), d.elemErr(err, lit, name)
	}
}

func (d *decoder) elemErr(err error, lit numLit, dtype string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotInteger):
		return semantic("value %s is not an integer, so it is not a valid %s", lit.lit, dtype)
	case errors.Is(err, errRange):
		return semantic("value %s is out of range for %s", lit.lit, dtype)
	}
	return err
}

func (d *decoder) float(bits int) (float64, error) {
	d.ws()
	if f, end, ok := parseFloatFast(d.b, d.i); ok && (bits == 64 || !float32Midpoint(f)) {
		d.i = end
		return f, nil
	}
	lit, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := lit.float(bits)
	if err != nil {
		return 0, semantic("value %s is out of range for FP%d", lit.lit, bits)
	}
	return f, nil
}

// halfFormat is FP16 or BF16: how float64 values round to it and what its
// values are (Inf counting as the next power of two, for ties at the top).
type halfFormat struct {
	name  string
	round func(float64) uint16
	value func(uint16) float64
	inf   uint16
}

var (
	f16Format = halfFormat{"FP16",
		func(f float64) uint16 { return uint16(tensor.F16FromFloat64(f)) },
		func(h uint16) float64 { return halfValue(float64(tensor.F16(h).Float32()), 0x1p16) }, 0x7c00}
	bf16Format = halfFormat{"BF16",
		func(f float64) uint16 { return uint16(tensor.BF16FromFloat64(f)) },
		func(h uint16) float64 { return halfValue(float64(tensor.BF16(h).Float32()), 0x1p128) }, 0x7f80}
)

func halfValue(v, top float64) float64 {
	if math.IsInf(v, 0) {
		return math.Copysign(top, v)
	}
	return v
}

// half decodes a number rounded once, to nearest even, to FP16 or BF16.
// The float64 nearest the literal rounds to the same value as the literal
// itself, except when it falls exactly halfway between two: then the
// literal's exact value decides. Numbers that round to ±Inf are out of
// range.
func (d *decoder) half(f halfFormat) (uint16, error) {
	d.ws()
	start := d.i
	x, err := d.float(64)
	if err != nil {
		return 0, err
	}
	h := f.round(x)
	if v := f.value(h); v != x {
		o := h - 1 // the neighbour on x's side
		if math.Abs(x) > math.Abs(v) {
			o = h + 1
		}
		if w := f.value(o); h&0x7fff <= f.inf && o&0x7fff <= f.inf && (v+w)/2 == x {
			c := cmpLiteral(d.b[start:d.i], x)
			if c != 0 && (c > 0) == (w > v) {
				h = o
			}
		}
	}
	if h&0x7fff == f.inf {
		return 0, semantic("value %s is out of range for %s", d.b[start:d.i], f.name)
	}
	return h, nil
}

func (d *decoder) boolean() (bool, error) {
	d.ws()
	switch {
	case d.lit("true"):
		return true, nil
	case d.lit("false"):
		return false, nil
	}
	if d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] >= '0' && d.b[d.i] <= '9') {
		return false, semantic("BOOL data must be true or false, not numbers")
	}
	return false, d.syntax("expected true or false")
}

// decodeArray decodes flat or nested data into a slice of n elements. Nested
// data must follow the shape exactly.
func decodeArray[T any](d *decoder, shape []int, n int, elem func(*decoder) (T, error)) ([]T, error) {
	return decodeArrayFast(d, shape, n, elem, nil)
}

// floatRun decodes the common run of a flat FP32 or FP64 array in one
// loop: numbers the fast path takes, each followed by ',' or the closing
// ']' (whitespace allowed around them), the elements tightRun takes first
// and the others one at a time. d.i is at an element. It stops at
// the first element it cannot take that way, before it, leaving that
// element and its errors to the general loop; done says it consumed the
// closing ']'. Each value is parseFloatFast's, taken only where that is
// exactly what decoder.float gives.
func floatRun[T float32 | float64](d *decoder, out []T, n int) ([]T, bool) {
	b := d.b
	i := d.i
	for len(out) < n {
		var closed bool
		if out, i, closed = tightRun(b, i, out, n); closed {
			d.i = i
			return out, true
		}
		d.i = i
		if len(out) == n {
			break
		}
		at := i
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		f, end, ok := parseFloatFast(b, i)
		if !ok || float32Midpoint(f) {
			// A float32 midpoint is left to decoder.float (for FP64 it
			// is just as exact there).
			d.i = at
			return out, false
		}
		i = end
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			out = append(out, T(f))
			i++
		case ']':
			d.i = i + 1
			return append(out, T(f)), true
		default:
			d.i = at
			return out, false
		}
		d.i = i
	}
	return out, false
}

// decodeArrayFast is decodeArray with fast, when not nil, taking the run
// of a flat array's elements it can (see floatRun) before the general loop
// goes on from where it stopped.
func decodeArrayFast[T any](d *decoder, shape []int, n int, elem func(*decoder) (T, error), fast func(*decoder, []T, int) ([]T, bool)) ([]T, error) {
	out := make([]T, 0, n)
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return nil, semantic(`"data" must be an array`)
	}
	j := d.i + 1
	for j < len(d.b) && isSpace(d.b[j]) {
		j++
	}
	if j < len(d.b) && d.b[j] == '[' {
		if len(shape) < 2 {
			return nil, semantic("data is nested but shape %s has rank %d", tensor.ShapeString(shape), len(shape))
		}
		var err error
		out, err = decodeNested(d, shape, out, elem, fast)
		return out, err
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		done := false
		if fast != nil {
			out, done = fast(d, out, n)
		}
		for !done {
			if len(out) == n {
				return nil, semantic("shape %s needs %d elements, data has more", tensor.ShapeString(shape), n)
			}
			v, err := elem(d)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			d.ws()
			if d.i >= len(d.b) {
				return nil, d.syntax("unexpected end of data")
			}
			c := d.b[d.i]
			d.i++
			if c == ']' {
				break
			}
			if c != ',' {
				d.i--
				return nil, d.syntax("expected ',' or ']' in array")
			}
		}
	}
	if len(out) != n {
		return nil, semantic("shape %s needs %d elements, data has %d", tensor.ShapeString(shape), n, len(out))
	}
	return out, nil
}

func decodeNested[T any](d *decoder, shape []int, out []T, elem func(*decoder) (T, error), fast func(*decoder, []T, int) ([]T, bool)) ([]T, error) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		if len(shape) > 0 && d.i < len(d.b) && d.b[d.i] != ']' {
			return nil, semantic("nested data does not match the shape: expected an array of %d", shape[0])
		}
		return nil, d.syntax("expected '['")
	}
	d.i++
	count := 0
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		done := false
		if len(shape) == 1 && fast != nil {
			// A row: fast takes what it can of at most shape[0] elements.
			before := len(out)
			out, done = fast(d, out, before+shape[0])
			count = len(out) - before
		}
		for !done {
			if count == shape[0] {
				return nil, semantic("nested data does not match the shape: more than %d entries at a dimension of size %d", shape[0], shape[0])
			}
			var err error
			if len(shape) == 1 {
				d.ws()
				if d.i < len(d.b) && d.b[d.i] == '[' {
					return nil, semantic("nested data is deeper than the shape's rank")
				}
				var v T
				v, err = elem(d)
				out = append(out, v)
			} else {
				out, err = decodeNested(d, shape[1:], out, elem, fast)
			}
			if err != nil {
				return nil, err
			}
			count++
			d.ws()
			if d.i >= len(d.b) {
				return nil, d.syntax("unexpected end of data")
			}
			c := d.b[d.i]
			d.i++
			if c == ']' {
				break
			}
			if c != ',' {
				d.i--
				return nil, d.syntax("expected ',' or ']' in array")
			}
		}
	}
	if count != shape[0] {
		return nil, semantic("nested data does not match the shape: %d entries at a dimension of size %d", count, shape[0])
	}
	return out, nil
}
