package oip

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

type (
	inferInput  = grpcpb.ModelInferRequest_InferInputTensor
	inferOutput = grpcpb.ModelInferRequest_InferRequestedOutputTensor
)

// tag appends a field's tag.
func tag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

// message appends a length-delimited field.
func message(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(b, num, protowire.BytesType), v)
}

func marshal(m *grpcpb.ModelInferRequest) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// wireCases are ModelInferRequest encodings of every form decoding
// meets: what clients send (packed, raw, parameters), and what they may
// (unpacked elements, packed runs split small, unknown fields, groups).
// n scales their repeated parts (a hundred: tens of thousands of fields,
// a megabyte of raw contents).
func wireCases(n int) map[string][]byte {
	params := map[string]*grpcpb.InferParameter{}
	for i := range 3 * n {
		params[strings.Repeat("k", i%17)+string(rune('a'+i%26))+string(rune('a'+i/26))] = &grpcpb.InferParameter{
			ParameterChoice: &grpcpb.InferParameter_StringParam{StringParam: strings.Repeat("v", i)}}
	}
	many := &grpcpb.ModelInferRequest{ModelName: "m"}
	for i := range 50 * n {
		many.Inputs = append(many.Inputs, &inferInput{Name: "input", Datatype: "FP32", Shape: []int64{1, int64(i)}})
		many.Outputs = append(many.Outputs, &inferOutput{Name: "out"})
	}
	words := make([][]byte, 40*n)
	for i := range words {
		words[i] = bytes.Repeat([]byte{'w'}, i%40)
	}

	// fp32_contents one element at a time, and in runs of one
	var unpacked, runs []byte
	for i := range 200 * n {
		unpacked = protowire.AppendFixed32(tag(unpacked, 6, protowire.Fixed32Type), math.Float32bits(float32(i)))
		if i < 30*n {
			runs = message(runs, 6, protowire.AppendFixed32(nil, math.Float32bits(float32(i))))
		}
	}
	var shape []byte
	for i := range 5 {
		shape = protowire.AppendVarint(tag(shape, 3, protowire.VarintType), uint64(i+1))
	}
	var unknown []byte
	for i := range 50 * n {
		unknown = protowire.AppendVarint(tag(unknown, protowire.Number(100+i%50), protowire.VarintType), uint64(i))
	}
	group := protowire.AppendVarint(tag(tag(nil, 9, protowire.StartGroupType), 1, protowire.VarintType), 5)
	group = tag(group, 9, protowire.EndGroupType)
	wrongType := protowire.AppendVarint(tag(nil, 5, protowire.VarintType), 7) // inputs as a varint: an unknown field

	return map[string][]byte{
		"typed": marshal(&grpcpb.ModelInferRequest{ModelName: "mnist", Id: "r1", Inputs: []*inferInput{{Name: "input", Datatype: "FP32", Shape: []int64{1, 784},
			Contents: &grpcpb.InferTensorContents{Fp32Contents: make([]float32, 784)}}}}),
		"raw": marshal(&grpcpb.ModelInferRequest{ModelName: "mnist", Inputs: []*inferInput{{Name: "input", Datatype: "FP32", Shape: []int64{int64(n), 1024}}},
			RawInputContents: [][]byte{make([]byte, 4096*n)}}),
		"every type": marshal(&grpcpb.ModelInferRequest{Inputs: []*inferInput{
			{Name: "b", Datatype: "BOOL", Shape: []int64{3}, Contents: &grpcpb.InferTensorContents{BoolContents: []bool{true, false, true}}},
			{Name: "i", Datatype: "INT32", Shape: []int64{2}, Contents: &grpcpb.InferTensorContents{IntContents: []int32{-1, 1 << 30}}},
			{Name: "l", Datatype: "INT64", Shape: []int64{2}, Contents: &grpcpb.InferTensorContents{Int64Contents: []int64{-1, 1 << 60}}},
			{Name: "u", Datatype: "UINT32", Shape: []int64{1}, Contents: &grpcpb.InferTensorContents{UintContents: []uint32{7}}},
			{Name: "v", Datatype: "UINT64", Shape: []int64{1}, Contents: &grpcpb.InferTensorContents{Uint64Contents: []uint64{math.MaxUint64}}},
			{Name: "d", Datatype: "FP64", Shape: []int64{2}, Contents: &grpcpb.InferTensorContents{Fp64Contents: []float64{0.5, -2}}},
			{Name: "s", Datatype: "BYTES", Shape: []int64{int64(len(words))}, Contents: &grpcpb.InferTensorContents{BytesContents: words}},
		}}),
		"parameters": marshal(&grpcpb.ModelInferRequest{Parameters: params,
			Inputs:  []*inferInput{{Name: "x", Datatype: "FP32", Parameters: params}},
			Outputs: []*inferOutput{{Name: "y", Parameters: params}}}),
		"many inputs": marshal(many),
		"unpacked":    message(nil, 5, message(message(nil, 1, []byte("x")), 5, unpacked)),
		"runs of one": message(nil, 5, message(message(nil, 1, []byte("x")), 5, runs)),
		"contents twice": message(nil, 5, append(message(message(nil, 1, []byte("x")), 5, runs[:6*min(n, 10)]),
			message(nil, 5, protowire.AppendVarint(tag(nil, 6, protowire.VarintType), 1))...)), // the second merges; its varint is unknown
		"unpacked shape": message(nil, 5, append(message(nil, 1, []byte("x")), shape...)),
		"unknown":        append(append(unknown, message(nil, 5, append(message(nil, 1, []byte("x")), unknown...))...), group...),
		"wrong type":     append(wrongType, message(nil, 6, message(nil, 1, []byte("y")))...),
		"empty":          nil,
	}
}

// allocated returns the bytes f allocates: the least of a few runs, as
// the count is the whole process's.
func allocated(f func()) int64 {
	least := int64(math.MaxInt64)
	for range 3 {
		least = min(least, allocatedOnce(f))
	}
	return least
}

func allocatedOnce(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestMeasureBoundsUnmarshal decodes each case with proto.Unmarshal: the
// walk counts its entries and elements as decoding finds them, and its
// Bytes are at least what decoding allocated, and not far above.
func TestMeasureBoundsUnmarshal(t *testing.T) {
	for name, b := range wireCases(100) {
		size, err := MeasureGRPCInferRequest(b, math.MaxInt64)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var m *grpcpb.ModelInferRequest
		UnmarshalGRPCInferRequest(b) // protobuf-go's first use of a message type allocates its tables
		used := allocated(func() { m, err = UnmarshalGRPCInferRequest(b) })
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		checkCounts(t, name, size, m)
		if used > size.Bytes || size.Bytes > 2*used+4096 {
			t.Errorf("%s: decoding allocated %d bytes, the walk counted %d", name, used, size.Bytes)
		}
	}
}

// checkCounts compares the walk's counts with a decoded message.
func checkCounts(t *testing.T, name string, size GRPCInferSize, m *grpcpb.ModelInferRequest) {
	t.Helper()
	var elements int64
	for _, in := range m.Inputs {
		if c := in.Contents; c != nil {
			elements += int64(len(c.BoolContents) + len(c.IntContents) + len(c.Int64Contents) + len(c.UintContents) +
				len(c.Uint64Contents) + len(c.Fp32Contents) + len(c.Fp64Contents) + len(c.BytesContents))
		}
	}
	if size.Inputs != len(m.Inputs) || size.Outputs != len(m.Outputs) || size.Raw != len(m.RawInputContents) || size.Elements != elements {
		t.Errorf("%s: the walk counted %+v; decoded: %d inputs, %d outputs, %d raw, %d elements", name, size,
			len(m.Inputs), len(m.Outputs), len(m.RawInputContents), elements)
	}
}

// holds returns the bytes a decoded message holds at the least: its
// messages, their strings, slices and elements.
func holds(m *grpcpb.ModelInferRequest) int64 {
	n := sizeRequest + int64(len(m.ModelName)+len(m.ModelVersion)+len(m.Id)) + int64(len(m.Parameters))*sizeParameter +
		int64(len(m.Inputs)+len(m.Outputs))*sizePointer + int64(len(m.RawInputContents))*sizeBytes
	for _, r := range m.RawInputContents {
		n += int64(len(r))
	}
	for _, o := range m.Outputs {
		n += sizeOutput + int64(len(o.Name)) + int64(len(o.Parameters))*sizeParameter
	}
	for _, in := range m.Inputs {
		n += sizeInput + int64(len(in.Name)+len(in.Datatype)) + 8*int64(len(in.Shape)) + int64(len(in.Parameters))*sizeParameter
		if c := in.Contents; c != nil {
			n += sizeContents + int64(len(c.BoolContents)) + 4*int64(len(c.IntContents)+len(c.UintContents)+len(c.Fp32Contents)) +
				8*int64(len(c.Int64Contents)+len(c.Uint64Contents)+len(c.Fp64Contents)) + sizeBytes*int64(len(c.BytesContents))
			for _, e := range c.BytesContents {
				n += int64(len(e))
			}
		}
	}
	return n
}

// TestMeasureEmptyInputsBomb: 30 million empty entries of inputs, 60 MB
// of encoding (58 KB gzipped), would decode into gigabytes of messages;
// the walk says so and allocates nothing for it, and stops counting once
// past its limit.
func TestMeasureEmptyInputsBomb(t *testing.T) {
	const n = 30_000_000
	b := bytes.Repeat([]byte{5<<3 | byte(protowire.BytesType), 0}, n)
	var size GRPCInferSize
	var err error
	if used := allocatedOnce(func() { size, err = MeasureGRPCInferRequest(b, math.MaxInt64) }); used > 1<<20 {
		t.Errorf("measuring allocated %d bytes", used)
	}
	if err != nil || size.Inputs != n || size.Bytes < n*(sizeInput+sizePointer) {
		t.Errorf("%+v %v", size, err)
	}
	size, err = MeasureGRPCInferRequest(b, 1<<30)
	if err != nil || size.Bytes <= 1<<30 || size.Inputs >= n/2 {
		t.Errorf("with a limit of 1 GiB: %+v %v", size, err)
	}
}

// TestMeasureRunsOfOne: a packed field sent as runs of one element is
// copied into a new array at every run; the walk counts those copies (a
// quadratic amount), so such a message is refused for its size.
func TestMeasureRunsOfOne(t *testing.T) {
	var runs []byte
	for range 200_000 {
		runs = message(runs, 6, make([]byte, 4))
	}
	size, err := MeasureGRPCInferRequest(message(nil, 5, message(nil, 5, runs)), math.MaxInt64)
	if err != nil || size.Elements != 200_000 || size.Bytes < 4*200_000*200_000/2 {
		t.Errorf("%+v %v", size, err)
	}
}

// TestMeasureRefuses: the protocol's limits, and encodings decoding
// cannot parse, are refused by the walk, each with an *Error naming
// where.
func TestMeasureRefuses(t *testing.T) {
	var rank []byte
	for range MaxRank + 1 {
		rank = protowire.AppendVarint(tag(rank, 3, protowire.VarintType), 1)
	}
	bools := protowire.AppendVarint(tag(nil, 1, protowire.BytesType), tensor.MaxElements+1) // a packed run claiming more elements than it holds
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"rank", message(nil, 5, append(message(nil, 1, []byte("x")), rank...)), `inputs[0] ("x"): shape has rank 33, at most 32 is supported`},
		{"packed rank", marshal(&grpcpb.ModelInferRequest{Inputs: []*inferInput{{}, {Name: "y", Shape: make([]int64, 40)}}}), `inputs[1] ("y"): shape has rank 40`},
		{"truncated", marshal(&grpcpb.ModelInferRequest{ModelName: "mnist"})[:4], "malformed protobuf in the request"},
		{"truncated input", message(nil, 5, []byte{0x0a, 0x05, 'x'}), "malformed protobuf in inputs[0]"},
		{"truncated contents", message(nil, 5, message(nil, 5, bools)), "malformed protobuf in inputs[0].contents"},
		{"end group", tag(nil, 4, protowire.EndGroupType), "malformed protobuf in the request"},
		{"field 0", []byte{0x02, 0x00}, "malformed protobuf"},
		{"parameters", message(nil, 6, message(nil, 2, []byte{0x12, 0x07})), "malformed protobuf in outputs[0].parameters"},
	} {
		_, err := MeasureGRPCInferRequest(tc.b, math.MaxInt64)
		var oe *Error
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an *Error with %q", tc.name, err, tc.want)
		}
		if _, uerr := UnmarshalGRPCInferRequest(tc.b); uerr == nil && !strings.Contains(tc.name, "rank") {
			t.Errorf("%s: refused by the walk, decoded by proto.Unmarshal", tc.name)
		}
	}
	// the element limit, on a message that cannot be built in memory: one
	// past it is counted from a packed run of 2^31 one-byte varints
	var a array
	var w wireWalk
	a.grow(&w, tensor.MaxElements+1, 1)
	if a.len <= tensor.MaxElements {
		t.Errorf("array of %d", a.len)
	}
}

// FuzzMeasureGRPCInferRequest checks the walk against proto.Unmarshal on
// arbitrary encodings (seeded with every case above, which go test runs):
// whatever decodes, the walk accepts with the counts decoding finds, or
// refuses for a limit the decoded message breaks; what the walk accepts
// and decodes converts to tensors without panicking.
func FuzzMeasureGRPCInferRequest(f *testing.F) {
	for _, b := range wireCases(1) {
		f.Add(b)
	}
	f.Add(message(nil, 5, message(message(nil, 1, []byte("x")), 3, make([]byte, 40))))
	f.Fuzz(func(t *testing.T, b []byte) {
		size, err := MeasureGRPCInferRequest(b, math.MaxInt64)
		m, uerr := UnmarshalGRPCInferRequest(b)
		if uerr != nil {
			return
		}
		if err != nil {
			for _, in := range m.Inputs {
				if len(in.Shape) > MaxRank {
					return
				}
			}
			t.Fatalf("the walk refuses what decodes: %v", err)
		}
		checkCounts(t, "fuzz", size, m)
		if held := holds(m); size.Bytes < held {
			t.Fatalf("%d bytes counted for a message holding %d", size.Bytes, held)
		}
		if req, err := DecodeGRPCInferRequest(m); err == nil {
			for _, in := range req.Inputs {
				if n, err := tensor.NumElements(in.Tensor.Shape); err != nil || n != in.Tensor.Len() {
					t.Fatalf("%s: %d elements for shape %v", in.Name, in.Tensor.Len(), in.Tensor.Shape)
				}
			}
		}
	})
}
