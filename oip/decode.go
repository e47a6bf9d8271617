package oip

import (
	"encoding/json"
	"errors"
	"fmt"

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
