package oip

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

func grpcInput(dt string, shape []int64, c *grpcpb.InferTensorContents) *grpcpb.ModelInferRequest {
	return &grpcpb.ModelInferRequest{Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: dt, Shape: shape, Contents: c}}}
}

// TestGRPCHalfAndBytes covers the datatypes no model here takes: FP16 and
// BF16 (raw, or rounded from fp32_contents) and BYTES (raw in Triton's
// length-prefixed layout, or bytes_contents), both ways.
func TestGRPCHalfAndBytes(t *testing.T) {
	halves := []float32{1, -2.5, 65504, 0.099975586}
	for _, dt := range []tensor.DataType{tensor.Float16, tensor.BFloat16} {
		var want *tensor.Tensor
		if dt == tensor.Float16 {
			want = tensor.From([]int{2, 2}, tensor.Float32ToHalf[tensor.F16](halves))
		} else {
			want = tensor.From([]int{2, 2}, tensor.Float32ToHalf[tensor.BF16](halves))
		}
		raw := tensor.AppendLittleEndian(nil, want)
		req := grpcInput(dt.String(), []int64{2, 2}, nil)
		req.RawInputContents = [][]byte{raw}
		got, err := DecodeGRPCInferRequest(req)
		if err != nil {
			t.Fatalf("%v raw: %v", dt, err)
		}
		if !reflect.DeepEqual(got.Inputs[0].Tensor, want) {
			t.Errorf("%v raw: %v, want %v", dt, got.Inputs[0].Tensor, want)
		}
		got, err = DecodeGRPCInferRequest(grpcInput(dt.String(), []int64{2, 2}, &grpcpb.InferTensorContents{Fp32Contents: halves}))
		if err != nil || !reflect.DeepEqual(got.Inputs[0].Tensor, want) {
			t.Errorf("%v from fp32_contents: %v %v, want %v", dt, got, err, want)
		}
		// typed answers are impossible for halves: the response goes raw
		resp := EncodeGRPCInferResponse(&InferResponse{Outputs: []OutputTensor{{Name: "y", Tensor: want}, {Name: "z", Tensor: tensor.From([]int{1}, []int64{7})}}}, false)
		if len(resp.RawOutputContents) != 2 || string(resp.RawOutputContents[0]) != string(raw) || resp.Outputs[0].Contents != nil || resp.Outputs[1].Contents != nil {
			t.Errorf("%v response: %v", dt, resp)
		}
		if binary.LittleEndian.Uint64(resp.RawOutputContents[1]) != 7 {
			t.Errorf("%v response: the INT64 beside it is %x", dt, resp.RawOutputContents[1])
		}
	}

	words := []string{"", "héllo", "\x00\xff"}
	bytesTensor := tensor.From([]int{3}, words)
	raw := AppendBinaryTensor(nil, bytesTensor)
	req := grpcInput("BYTES", []int64{3}, nil)
	req.RawInputContents = [][]byte{raw}
	got, err := DecodeGRPCInferRequest(req)
	if err != nil || !reflect.DeepEqual(got.Inputs[0].Tensor.Data, words) {
		t.Errorf("BYTES raw: %v %v", got, err)
	}
	got, err = DecodeGRPCInferRequest(grpcInput("BYTES", []int64{3}, &grpcpb.InferTensorContents{BytesContents: [][]byte{{}, []byte("héllo"), {0, 0xff}}}))
	if err != nil || !reflect.DeepEqual(got.Inputs[0].Tensor.Data, words) {
		t.Errorf("BYTES typed: %v %v", got, err)
	}
	resp := EncodeGRPCInferResponse(&InferResponse{Outputs: []OutputTensor{{Name: "s", Tensor: bytesTensor}}}, false)
	if c := resp.Outputs[0].Contents; c == nil || len(c.BytesContents) != 3 || string(c.BytesContents[1]) != "héllo" {
		t.Errorf("BYTES typed response: %v", resp)
	}
	resp = EncodeGRPCInferResponse(&InferResponse{Outputs: []OutputTensor{{Name: "s", Tensor: bytesTensor}}}, true)
	if len(resp.RawOutputContents) != 1 || string(resp.RawOutputContents[0]) != string(raw) {
		t.Errorf("BYTES raw response: %v", resp)
	}
	for _, bad := range [][]byte{{5, 0, 0, 0, 'a'}, {1, 0}, append(append([]byte(nil), raw...), 9)} {
		req.RawInputContents = [][]byte{bad}
		if _, err := DecodeGRPCInferRequest(req); err == nil {
			t.Errorf("BYTES raw %x accepted", bad)
		}
	}
}

// TestGRPCDecodeErrors: every refusal is an *Error naming the input.
func TestGRPCDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		req  *grpcpb.ModelInferRequest
		want string
	}{
		{grpcInput("FP32", []int64{2}, &grpcpb.InferTensorContents{Fp32Contents: []float32{1}}), "fp32_contents has 1 elements, shape needs 2"},
		{grpcInput("UINT16", []int64{1}, &grpcpb.InferTensorContents{UintContents: []uint32{70000}}), "70000 is out of range for UINT16"},
		{grpcInput("INT16", []int64{1}, &grpcpb.InferTensorContents{IntContents: []int32{-40000}}), "-40000 is out of range for INT16"},
		{grpcInput("BOOL", []int64{1}, &grpcpb.InferTensorContents{BoolContents: []bool{true}, IntContents: []int32{1}}), "int_contents is set for a BOOL tensor"},
		{grpcInput("FP32", make([]int64, MaxRank+1), nil), "rank"},
		{grpcInput("FP32", []int64{1 << 40}, nil), "shape dimension"},
		{&grpcpb.ModelInferRequest{Inputs: []*grpcpb.ModelInferRequest_InferInputTensor{{Datatype: "FP32"}}}, "missing name"},
	} {
		_, err := DecodeGRPCInferRequest(tc.req)
		var oe *Error
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "inputs[0]") {
			t.Errorf("%v: got %v, want an *Error with %q", tc.req, err, tc.want)
		}
	}
	// an empty tensor needs no contents at all
	got, err := DecodeGRPCInferRequest(grpcInput("FP32", []int64{0, 3}, nil))
	if err != nil || got.Inputs[0].Tensor.Len() != 0 {
		t.Errorf("empty tensor: %v %v", got, err)
	}
}

// TestGRPCResponseBytes: what GRPCResponseBytes says converting an
// answer allocates for its elements is what converting it allocates, give
// or take the messages around them and the allocator's rounding, typed
// and raw.
func TestGRPCResponseBytes(t *testing.T) {
	const n = 1 << 14
	words := make([]string, n)
	for i := range words {
		words[i] = strings.Repeat("w", i%20)
	}
	for _, out := range []*tensor.Tensor{
		tensor.From([]int{n}, make([]float32, n)), tensor.From([]int{n}, make([]int64, n)), tensor.From([]int{n}, make([]uint8, n)),
		tensor.From([]int{n}, make([]int16, n)), tensor.From([]int{n}, make([]bool, n)), tensor.From([]int{n}, words),
		tensor.From([]int{n}, make([]tensor.F16, n)),
	} {
		resp := &InferResponse{Outputs: []OutputTensor{{Name: "y", Tensor: out}}}
		for _, raw := range []bool{false, true} {
			want := GRPCResponseBytes(resp, raw)
			got := allocated(func() { EncodeGRPCInferResponse(resp, raw) })
			if got > want+2048 || want > got+got/4+2048 {
				t.Errorf("%v raw=%v: converting allocated %d bytes, GRPCResponseBytes says %d", out.DType, raw, got, want)
			}
		}
	}
}
