package oip

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/quantserve/quantserve/tensor"
)

// MaxRank bounds the rank of a request tensor (and so the nesting of its
// data), keeping recursion shallow whatever the body holds.
const MaxRank = 32

// maxNesting bounds the nesting of values the decoder skips over.
const maxNesting = 256

// Error is a decoding error: malformed JSON or a body that does not
// describe valid tensors. Callers answer it with 400.
type Error struct {
	Offset int // byte offset in the body, -1 when not about syntax
	Msg    string
}

func (e *Error) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("malformed JSON at byte %d: %s", e.Offset, e.Msg)
	}
	return e.Msg
}

var (
	errRange      = errors.New("out of range")
	errNotInteger = errors.New("not an integer")
)

// keySet tracks which of an object's known keys have been seen, so a
// duplicate is refused rather than silently overriding the first.
type keySet uint8

func (s *keySet) add(key string, known ...string) error {
	for i, k := range known {
		if k == key {
			if *s&(1<<i) != 0 {
				return semantic("duplicate key %q", key)
			}
			*s |= 1 << i
		}
	}
	return nil
}

type decoder struct {
	b     []byte
	i     int
	depth int
	// binary allows inputs without "data" (their bytes follow the JSON,
	// Triton's binary tensor data extension).
	binary bool
}

func (d *decoder) syntax(format string, args ...any) error {
	return &Error{Offset: d.i, Msg: fmt.Sprintf(format, args...)}
}

func semantic(format string, args ...any) error {
	return &Error{Offset: -1, Msg: fmt.Sprintf(format, args...)}
}

// DecodeTensor decodes one tensor object, {"shape", "datatype", "data"}
// with an optional "name", as the tensor endpoints take them. Every error
// it returns is an *Error.
func DecodeTensor(b []byte) (*tensor.Tensor, error) {
	d := &decoder{b: b}
	in, err := d.input(-1)
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, d.syntax("unexpected data after the tensor")
	}
	return in.Tensor, nil
}

// DecodeInferRequest decodes an inference request body. Every error it
// returns is an *Error.
func DecodeInferRequest(body []byte) (*InferRequest, error) {
	return decodeInferRequest(&decoder{b: body})
}

// DecodeBinaryInferRequest decodes a request in Triton's binary tensor
// data extension: a JSON header followed by the raw bytes of the inputs
// whose "parameters" give "binary_data_size" instead of "data", in input
// order, little-endian, BOOL one byte each. Every error is an *Error.
func DecodeBinaryInferRequest(header, binary []byte) (*InferRequest, error) {
	req, err := decodeInferRequest(&decoder{b: header, binary: true})
	if err != nil {
		return nil, err
	}
	for i := range req.Inputs {
		in := &req.Inputs[i]
		if in.Tensor.Data != nil {
			continue
		}
		var p struct {
			Size *int64 `json:"binary_data_size"`
		}
		if len(in.Parameters) > 0 {
			if err := json.Unmarshal(in.Parameters, &p); err != nil {
				return nil, semantic("%s: parameters.binary_data_size must be an integer: %v", label(i, in.Name), err)
			}
		}
		if p.Size == nil {
			return nil, semantic(`%s: missing "data" (or parameters.binary_data_size with the bytes after the JSON header)`, label(i, in.Name))
		}
		n, err := tensor.NumElements(in.Tensor.Shape)
		if err != nil {
			return nil, semantic("%s: %v", label(i, in.Name), err)
		}
		want := int64(n) * int64(in.Tensor.DType.Size())
		if in.Tensor.DType == tensor.String {
			want = *p.Size // BYTES elements vary in size: they must fill it
			if want < 0 {
				return nil, semantic("%s: binary_data_size is %d", label(i, in.Name), want)
			}
		}
		if *p.Size != want {
			return nil, semantic("%s: binary_data_size is %d, shape %s of %v needs %d bytes", label(i, in.Name), *p.Size, tensor.ShapeString(in.Tensor.Shape), in.Tensor.DType, want)
		}
		if int64(len(binary)) < want {
			return nil, semantic("%s: the binary section has %d bytes left, the tensor needs %d", label(i, in.Name), len(binary), want)
		}
		if in.Tensor.DType == tensor.String {
			s, err := bytesFromBinary(binary[:want], n)
			if err != nil {
				err.(*Error).Msg = label(i, in.Name) + ": " + err.(*Error).Msg
				return nil, err
			}
			in.Tensor.Data = s
		} else {
			in.Tensor.Data = tensor.FromLittleEndian(in.Tensor.DType, binary, n)
		}
		binary = binary[want:]
	}
	if len(binary) != 0 {
		return nil, semantic("%d bytes after the JSON header belong to no input", len(binary))
	}
	return req, nil
}

func decodeInferRequest(d *decoder) (*InferRequest, error) {
	req := &InferRequest{}
	seenInputs := false
	var seen keySet
	err := d.object(func(key string) error {
		if err := seen.add(key, "id", "parameters", "inputs", "outputs"); err != nil {
			return err
		}
		switch key {
		case "id":
			s, err := d.str()
			req.ID = s
			return err
		case "parameters":
			raw, err := d.rawObject()
			req.Parameters = raw
			return err
		case "inputs":
			seenInputs = true
			req.Inputs = req.Inputs[:0]
			return d.array(func(i int) error {
				in, err := d.input(i)
				if err == nil {
					req.Inputs = append(req.Inputs, in)
				}
				return err
			})
		case "outputs":
			req.Outputs = req.Outputs[:0]
			return d.array(func(i int) error {
				out, err := d.output(i)
				if err == nil {
					req.Outputs = append(req.Outputs, out)
				}
				return err
			})
		}
		return d.skip()
	})
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, d.syntax("unexpected data after the top-level value")
	}
	if !seenInputs {
		return nil, semantic(`the request has no "inputs"`)
	}
	return req, nil
}

func (d *decoder) input(idx int) (InputTensor, error) {
	var in InputTensor
	var shape []int
	var dtName string
	var haveName, haveShape, haveType bool
	dataAt := -1
	var data any
	var seen keySet
	err := d.object(func(key string) error {
		if err := seen.add(key, "name", "shape", "datatype", "parameters", "data"); err != nil {
			return err
		}
		var err error
		switch key {
		case "name":
			in.Name, err = d.str()
			haveName = true
		case "shape":
			shape, err = d.shape()
			if err == nil && len(shape) > MaxRank {
				err = semantic("%s: shape has rank %d, at most %d is supported", label(idx, in.Name), len(shape), MaxRank)
			}
			haveShape = true
		case "datatype":
			dtName, err = d.str()
			haveType = true
		case "parameters":
			in.Parameters, err = d.rawObject()
		case "data":
			d.ws()
			if haveShape && haveType {
				// The usual order: decode straight away.
				data, err = d.tensorData(idx, in.Name, dtName, shape)
				dataAt = -1
			} else {
				dataAt = d.i
				data = nil
				err = d.skip()
			}
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return in, err
	}
	switch {
	case !haveName && idx >= 0:
		return in, semantic(`inputs[%d]: missing "name"`, idx)
	case !haveShape:
		return in, semantic(`%s: missing "shape"`, label(idx, in.Name))
	case !haveType:
		return in, semantic(`%s: missing "datatype"`, label(idx, in.Name))
	}
	if dataAt >= 0 {
		save := d.i
		d.i = dataAt
		data, err = d.tensorData(idx, in.Name, dtName, shape)
		d.i = save
		if err != nil {
			return in, err
		}
	}
	dt, ok := tensor.ParseDataType(dtName)
	if data == nil && d.binary && idx >= 0 {
		if !ok {
			return in, semantic("%s: unsupported datatype %q", label(idx, in.Name), dtName)
		}
		in.Tensor = &tensor.Tensor{DType: dt, Shape: shape} // data from the binary section
		return in, nil
	}
	if data == nil {
		return in, semantic(`%s: missing "data"`, label(idx, in.Name))
	}
	in.Tensor = &tensor.Tensor{DType: dt, Shape: shape, Data: data}
	return in, nil
}

// label names a tensor in errors: inputs[i] ("name"), or "tensor".
func label(idx int, name string) string {
	switch {
	case idx < 0 && name == "":
		return "tensor"
	case idx < 0:
		return fmt.Sprintf("tensor %q", name)
	}
	return fmt.Sprintf("inputs[%d] (%q)", idx, name)
}

func (d *decoder) output(idx int) (RequestedOutput, error) {
	var out RequestedOutput
	haveName := false
	var seen keySet
	err := d.object(func(key string) error {
		if err := seen.add(key, "name", "parameters"); err != nil {
			return err
		}
		var err error
		switch key {
		case "name":
			out.Name, err = d.str()
			haveName = true
		case "parameters":
			out.Parameters, err = d.rawObject()
		default:
			err = d.skip()
		}
		return err
	})
	if err == nil && !haveName {
		err = semantic(`outputs[%d]: missing "name"`, idx)
	}
	return out, err
}

func (d *decoder) shape() ([]int, error) {
	shape := []int{}
	err := d.array(func(int) error {
		d.ws()
		n, err := d.number()
		if err != nil {
			return err
		}
		neg, mag, err := n.integer()
		if err != nil || neg && mag != 0 || mag > tensor.MaxElements {
			return semantic("shape dimension %s is not an integer in [0, %d]", n.lit, tensor.MaxElements)
		}
		if len(shape) >= MaxRank {
			return semantic("shape has more than %d dimensions", MaxRank)
		}
		shape = append(shape, int(mag))
		return nil
	})
	return shape, err
}

// tensorData decodes the data array at d.i for the given datatype and
// shape into a typed slice.
func (d *decoder) tensorData(idx int, name, dtName string, shape []int) (any, error) {
	where := label(idx, name)
	dt, ok := tensor.ParseDataType(dtName)
	if !ok {
		return nil, semantic("%s: unsupported datatype %q (supported: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES)", where, dtName)
	}
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, semantic("%s: shape %s: %v", where, tensor.ShapeString(shape), err)
	}
	// Each element takes at least two bytes ("1,"), so a body cannot hold
	// more than this many: refuse before allocating for a lying shape.
	if limit := (len(d.b)-d.i)/2 + 1; n > limit {
		return nil, semantic("%s: shape %s needs %d elements, more than the body holds", where, tensor.ShapeString(shape), n)
	}
	var data any
	switch dt {
	case tensor.Float32:
		data, err = decodeArray(d, shape, n, func(d *decoder) (float32, error) {
			f, err := d.float(32)
			return float32(f), err
		})
	case tensor.Float64:
		data, err = decodeArray(d, shape, n, func(d *decoder) (float64, error) { return d.float(64) })
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
			e.Msg = where + ": " + e.Msg
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
	if f, end, ok := parseFloatFast(d.b, d.i); ok {
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
		out, err = decodeNested(d, shape, out, elem)
		return out, err
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for {
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

func decodeNested[T any](d *decoder, shape []int, out []T, elem func(*decoder) (T, error)) ([]T, error) {
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
		for {
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
				out, err = decodeNested(d, shape[1:], out, elem)
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

// number scans a JSON number at d.i.
func (d *decoder) number() (numLit, error) {
	b := d.b
	i := d.i
	start := i
	var n numLit
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return n, d.syntaxAt(i, "expected a number")
	}
	nd := 0 // significant digits kept in mant
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if nd < 19 {
				n.mant = n.mant*10 + uint64(b[i]-'0')
				nd++
			} else {
				n.exp10++
				if b[i] != '0' {
					n.trunc = true
				}
			}
		}
	default:
		return n, d.syntaxAt(i, "expected a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return n, d.syntaxAt(i, "expected a digit after the decimal point")
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if n.mant == 0 && b[i] == '0' {
				n.exp10--
				continue
			}
			if nd < 19 {
				n.mant = n.mant*10 + uint64(b[i]-'0')
				nd++
				n.exp10--
			} else if b[i] != '0' {
				n.trunc = true
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return n, d.syntaxAt(i, "expected a digit in the exponent")
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 1e8 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		n.exp10 += e
	}
	n.lit = b[start:i]
	d.i = i
	return n, nil
}

func (d *decoder) syntaxAt(i int, msg string) error {
	d.i = i
	if i >= len(d.b) {
		return d.syntax("unexpected end of input: %s", msg)
	}
	return d.syntax("%s, found %q", msg, d.b[i])
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (d *decoder) ws() {
	for d.i < len(d.b) && isSpace(d.b[d.i]) {
		d.i++
	}
}

func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// object parses an object, calling field with d.i after the colon of each
// member; field must consume the value.
func (d *decoder) object(field func(key string) error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.syntaxAt(d.i, "expected an object")
	}
	if d.depth++; d.depth > maxNesting {
		return d.syntax("values nested too deeply")
	}
	defer func() { d.depth-- }()
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntaxAt(d.i, "expected ':' after an object key")
		}
		d.i++
		if err := field(key); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of input in an object")
		}
		c := d.b[d.i]
		d.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.syntaxAt(d.i, "expected ',' or '}' in an object")
		}
	}
}

// array parses an array, calling elem with d.i at each element; elem must
// consume it.
func (d *decoder) array(elem func(i int) error) error {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.syntaxAt(d.i, "expected an array")
	}
	if d.depth++; d.depth > maxNesting {
		return d.syntax("values nested too deeply")
	}
	defer func() { d.depth-- }()
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("unexpected end of input in an array")
		}
		c := d.b[d.i]
		d.i++
		if c == ']' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.syntaxAt(d.i, "expected ',' or ']' in an array")
		}
	}
}

// str parses a JSON string.
func (d *decoder) str() (string, error) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.syntaxAt(d.i, "expected a string")
	}
	start := d.i
	i := d.i + 1
	escaped := false
	for ; i < len(d.b); i++ {
		c := d.b[i]
		switch {
		case c == '"':
			d.i = i + 1
			if !escaped && utf8.Valid(d.b[start+1:i]) {
				return string(d.b[start+1 : i]), nil
			}
			var s string
			if err := json.Unmarshal(d.b[start:i+1], &s); err != nil {
				d.i = start
				return "", d.syntax("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			d.i = i
			return "", d.syntax("control character in a string")
		}
	}
	d.i = i
	return "", d.syntax("unexpected end of input in a string")
}

// rawObject returns a copy of the object at d.i.
func (d *decoder) rawObject() (json.RawMessage, error) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, d.syntaxAt(d.i, `expected an object for "parameters"`)
	}
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), d.b[start:d.i]...), nil
}

// skip consumes and validates one JSON value.
func (d *decoder) skip() error {
	d.ws()
	if d.i >= len(d.b) {
		return d.syntax("unexpected end of input: expected a value")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(func(string) error { return d.skip() })
	case c == '[':
		return d.array(func(int) error { return d.skip() })
	case c == '"':
		_, err := d.str()
		return err
	case c == 't':
		if d.lit("true") {
			return nil
		}
	case c == 'f':
		if d.lit("false") {
			return nil
		}
	case c == 'n':
		if d.lit("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.number()
		return err
	}
	return d.syntaxAt(d.i, "expected a value")
}
