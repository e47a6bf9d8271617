package oip

import (
	"fmt"
	"math"

	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

// The gRPC form of the protocol (grpcpb, generated from Triton's grpc_service.proto) carries
// a tensor's elements either in the typed field of InferTensorContents its
// datatype calls for, or as raw little-endian bytes in the request's
// raw_input_contents (the response's raw_output_contents), one entry per
// tensor in order: Triton's layout, BOOL one byte each, BYTES each as a
// 4-byte little-endian length and its bytes. FP16 and BF16 have no typed
// field; they travel raw.

// DecodeGRPCInferRequest converts a ModelInferRequest into an
// InferRequest: each input's elements (typed contents, or its entry of
// raw_input_contents) into a tensor of its datatype and shape. Counts are
// checked against the shape before anything is allocated; typed values out
// of their datatype's range are refused. Input and request parameters are
// not read. Every error it returns is an *Error.
func DecodeGRPCInferRequest(req *grpcpb.ModelInferRequest) (*InferRequest, error) {
	raw := req.GetRawInputContents()
	if len(raw) > 0 && len(raw) != len(req.GetInputs()) {
		return nil, semantic("raw_input_contents has %d entries for %d inputs: give one per input, in order", len(raw), len(req.GetInputs()))
	}
	if len(req.GetInputs()) == 0 {
		return nil, semantic("the request has no inputs")
	}
	out := &InferRequest{ID: req.GetId(), Inputs: make([]InputTensor, 0, len(req.GetInputs()))}
	for i, in := range req.GetInputs() {
		where := label(i, in.GetName())
		if in.GetName() == "" {
			return nil, semantic("inputs[%d]: missing name", i)
		}
		dt, ok := tensor.ParseDataType(in.GetDatatype())
		if !ok {
			return nil, semantic("%s: unsupported datatype %q", where, in.GetDatatype())
		}
		if len(in.GetShape()) > MaxRank {
			return nil, semantic("%s: shape has rank %d, at most %d is supported", where, len(in.GetShape()), MaxRank)
		}
		shape := make([]int, len(in.GetShape()))
		for k, d := range in.GetShape() {
			if d < 0 || d > tensor.MaxElements {
				return nil, semantic("%s: shape dimension %d is not an integer in [0, %d]", where, d, tensor.MaxElements)
			}
			shape[k] = int(d)
		}
		n, err := tensor.NumElements(shape)
		if err != nil {
			return nil, semantic("%s: %v", where, err)
		}
		var data any
		if len(raw) > 0 {
			if hasContents(in.GetContents()) {
				return nil, semantic("%s: contents are set while the request uses raw_input_contents: use one or the other for every input", where)
			}
			data, err = fromRaw(dt, raw[i], n)
		} else {
			data, err = fromContents(dt, in.GetContents(), n)
		}
		if err != nil {
			return nil, semantic("%s: %v", where, err)
		}
		out.Inputs = append(out.Inputs, InputTensor{Name: in.GetName(), Tensor: &tensor.Tensor{DType: dt, Shape: shape, Data: data}})
	}
	for _, o := range req.GetOutputs() {
		out.Outputs = append(out.Outputs, RequestedOutput{Name: o.GetName()})
	}
	return out, nil
}

func hasContents(c *grpcpb.InferTensorContents) bool {
	return c != nil && (len(c.BoolContents) > 0 || len(c.IntContents) > 0 || len(c.Int64Contents) > 0 || len(c.UintContents) > 0 ||
		len(c.Uint64Contents) > 0 || len(c.Fp32Contents) > 0 || len(c.Fp64Contents) > 0 || len(c.BytesContents) > 0)
}

func fromRaw(dt tensor.DataType, raw []byte, n int) (any, error) {
	if dt == tensor.String {
		s, err := bytesFromBinary(raw, n)
		if err != nil {
			return nil, fmt.Errorf("raw_input_contents: %s", err.(*Error).Msg)
		}
		return s, nil
	}
	if want := int64(n) * int64(dt.Size()); int64(len(raw)) != want {
		return nil, fmt.Errorf("raw_input_contents has %d bytes, %d elements of %v need %d", len(raw), n, dt, want)
	}
	return tensor.FromLittleEndian(dt, raw, n), nil
}

// contentsField names the typed field each datatype takes.
func contentsField(dt tensor.DataType) string {
	switch dt {
	case tensor.Bool:
		return "bool_contents"
	case tensor.Int8, tensor.Int16, tensor.Int32:
		return "int_contents"
	case tensor.Int64:
		return "int64_contents"
	case tensor.Uint8, tensor.Uint16, tensor.Uint32:
		return "uint_contents"
	case tensor.Uint64:
		return "uint64_contents"
	case tensor.Float32, tensor.Float16, tensor.BFloat16:
		return "fp32_contents"
	case tensor.Float64:
		return "fp64_contents"
	case tensor.String:
		return "bytes_contents"
	}
	return ""
}

// fromContents reads n elements of dt from the typed field its datatype
// takes; any other field set is an error. FP16 and BF16, which have no
// field of their own, are also read from fp32_contents, rounded to nearest
// even.
func fromContents(dt tensor.DataType, c *grpcpb.InferTensorContents, n int) (any, error) {
	if c == nil {
		c = &grpcpb.InferTensorContents{}
	}
	field := contentsField(dt)
	lens := map[string]int{
		"bool_contents": len(c.BoolContents), "int_contents": len(c.IntContents), "int64_contents": len(c.Int64Contents),
		"uint_contents": len(c.UintContents), "uint64_contents": len(c.Uint64Contents), "fp32_contents": len(c.Fp32Contents),
		"fp64_contents": len(c.Fp64Contents), "bytes_contents": len(c.BytesContents),
	}
	for f, l := range lens {
		if f != field && l > 0 {
			return nil, fmt.Errorf("contents.%s is set for a %v tensor, which takes contents.%s (or raw_input_contents)", f, dt, field)
		}
	}
	if lens[field] != n {
		return nil, fmt.Errorf("contents.%s has %d elements, shape needs %d", field, lens[field], n)
	}
	switch dt {
	case tensor.Bool:
		return append([]bool(nil), c.BoolContents...), nil
	case tensor.Int8:
		return narrow[int8](c.IntContents, math.MinInt8, math.MaxInt8, dt)
	case tensor.Int16:
		return narrow[int16](c.IntContents, math.MinInt16, math.MaxInt16, dt)
	case tensor.Int32:
		return append([]int32(nil), c.IntContents...), nil
	case tensor.Int64:
		return append([]int64(nil), c.Int64Contents...), nil
	case tensor.Uint8:
		return narrow[uint8](c.UintContents, 0, math.MaxUint8, dt)
	case tensor.Uint16:
		return narrow[uint16](c.UintContents, 0, math.MaxUint16, dt)
	case tensor.Uint32:
		return append([]uint32(nil), c.UintContents...), nil
	case tensor.Uint64:
		return append([]uint64(nil), c.Uint64Contents...), nil
	case tensor.Float32:
		return append([]float32(nil), c.Fp32Contents...), nil
	case tensor.Float16:
		return tensor.Float32ToHalf[tensor.F16](c.Fp32Contents), nil
	case tensor.BFloat16:
		return tensor.Float32ToHalf[tensor.BF16](c.Fp32Contents), nil
	case tensor.Float64:
		return append([]float64(nil), c.Fp64Contents...), nil
	case tensor.String:
		s := make([]string, len(c.BytesContents))
		for i, b := range c.BytesContents {
			s[i] = string(b)
		}
		return s, nil
	}
	return nil, fmt.Errorf("datatype %v has no contents field", dt)
}

// narrow converts the wide values a typed field holds to T, refusing
// values outside [lo, hi].
func narrow[T int8 | int16 | uint8 | uint16, W int32 | uint32](in []W, lo, hi int64, dt tensor.DataType) ([]T, error) {
	out := make([]T, len(in))
	for i, v := range in {
		if int64(v) < lo || int64(v) > hi {
			return nil, fmt.Errorf("element %d: %d is out of range for %v", i, v, dt)
		}
		out[i] = T(v)
	}
	return out, nil
}

// EncodeGRPCInferResponse converts resp into a ModelInferResponse. With
// raw, every output's elements go in raw_output_contents (Triton's
// layout); otherwise in its typed contents, unless an output is FP16 or
// BF16, which have no typed field: then all go raw, since the protocol
// does not mix the two forms in one response.
func EncodeGRPCInferResponse(resp *InferResponse, raw bool) *grpcpb.ModelInferResponse {
	out := &grpcpb.ModelInferResponse{ModelName: resp.ModelName, ModelVersion: resp.ModelVersion, Id: resp.ID}
	raw = rawResponse(resp, raw)
	for _, o := range resp.Outputs {
		shape := make([]int64, len(o.Tensor.Shape))
		for i, d := range o.Tensor.Shape {
			shape[i] = int64(d)
		}
		t := &grpcpb.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: o.Tensor.DType.String(), Shape: shape}
		if raw {
			out.RawOutputContents = append(out.RawOutputContents, AppendBinaryTensor(make([]byte, 0, BinarySize(o.Tensor)), o.Tensor))
		} else {
			t.Contents = contentsOf(o.Tensor)
		}
		out.Outputs = append(out.Outputs, t)
	}
	return out
}

// rawResponse tells whether resp goes in raw_output_contents: when asked
// for, or when an output has no typed field.
func rawResponse(resp *InferResponse, raw bool) bool {
	for _, o := range resp.Outputs {
		if o.Tensor.DType == tensor.Float16 || o.Tensor.DType == tensor.BFloat16 {
			return true
		}
	}
	return raw
}

// GRPCResponseBytes returns the bytes EncodeGRPCInferResponse(resp, raw)
// allocates for the outputs' elements: their raw copies, or the typed
// contents it widens or converts (contents of an output's own type are
// the output's elements, not a copy).
func GRPCResponseBytes(resp *InferResponse, raw bool) int64 {
	raw = rawResponse(resp, raw)
	var n int64
	for _, o := range resp.Outputs {
		if raw {
			n += int64(BinarySize(o.Tensor))
			continue
		}
		switch d := o.Tensor.Data.(type) {
		case []int8, []int16, []uint8, []uint16:
			n += 4 * int64(o.Tensor.Len())
		case []string:
			for _, s := range d {
				n += 24 + int64(len(s)+15)&^15 // the slice header, and the bytes as the allocator rounds them
			}
		}
	}
	return n
}

// contentsOf returns t's elements in the typed field of its datatype.
func contentsOf(t *tensor.Tensor) *grpcpb.InferTensorContents {
	c := &grpcpb.InferTensorContents{}
	switch d := t.Data.(type) {
	case []bool:
		c.BoolContents = d
	case []int8:
		c.IntContents = widen[int32](d)
	case []int16:
		c.IntContents = widen[int32](d)
	case []int32:
		c.IntContents = d
	case []int64:
		c.Int64Contents = d
	case []uint8:
		c.UintContents = widen[uint32](d)
	case []uint16:
		c.UintContents = widen[uint32](d)
	case []uint32:
		c.UintContents = d
	case []uint64:
		c.Uint64Contents = d
	case []float32:
		c.Fp32Contents = d
	case []float64:
		c.Fp64Contents = d
	case []string:
		c.BytesContents = make([][]byte, len(d))
		for i, s := range d {
			c.BytesContents[i] = []byte(s)
		}
	}
	return c
}

func widen[W int32 | uint32, T int8 | int16 | uint8 | uint16](in []T) []W {
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = W(v)
	}
	return out
}
