package oip

import (
	"math"
	"testing"

	"github.com/quantserve/quantserve/tensor"
)

// TestInferResponseBoundHolds: the bound is at least the encoded answer
// for the widest value of every type, in JSON and in binary, with names
// and strings that need escaping.
func TestInferResponseBoundHolds(t *testing.T) {
	const n = 1000
	strs := make([]string, n)
	for i := range strs {
		strs[i] = "\x01<\"\\\xff>" + string(rune(0x10000+i))
	}
	var outs []OutputTensor
	add := func(tt *tensor.Tensor) {
		for _, bin := range []bool{false, true} {
			outs = append(outs, OutputTensor{Name: "o\x02\"<>&", Tensor: tt, Binary: bin})
		}
	}
	add(tensor.From([]int{n}, strs))
	add(tensor.From([]int{2, n / 2}, make([]bool, n)))
	add(same(n, float32(-1.1754944e-38)))
	add(same(n, -2.2250738585072014e-308))
	add(same(n, tensor.F16From(-6.1035156e-05)))
	add(same(n, tensor.BF16From(-1.1754944e-38)))
	add(same(n, int8(math.MinInt8)))
	add(same(n, int16(math.MinInt16)))
	add(same(n, int32(math.MinInt32)))
	add(same(n, int64(math.MinInt64)))
	add(same(n, uint8(math.MaxUint8)))
	add(same(n, uint16(math.MaxUint16)))
	add(same(n, uint32(math.MaxUint32)))
	add(same(n, uint64(math.MaxUint64)))
	r := &InferResponse{ModelName: "m\x00", ModelVersion: "\u2028", ID: "<id>", Outputs: outs}
	b := AppendInferResponse(nil, r)
	b = append(b, '\n')
	for _, o := range r.Outputs {
		if o.Binary {
			b = AppendBinaryTensor(b, o.Tensor)
		}
	}
	if bound := InferResponseBound(r); bound < int64(len(b)) {
		t.Errorf("bound %d < encoded %d bytes", bound, len(b))
	} else if bound > 2*int64(len(b)) {
		t.Errorf("bound %d is more than twice the encoded %d bytes", bound, len(b))
	}
	for _, o := range r.Outputs[2:] {
		one := &InferResponse{Outputs: []OutputTensor{o}}
		enc := AppendInferResponse(nil, one)
		if o.Binary {
			enc = AppendBinaryTensor(enc, o.Tensor)
		}
		if bound := InferResponseBound(one); bound < int64(len(enc)) {
			t.Errorf("%v (binary %v): bound %d < encoded %d bytes", o.Tensor.DType, o.Binary, bound, len(enc))
		}
	}
}

// same is a tensor of n copies of v.
func same[T tensor.Elem](n int, v T) *tensor.Tensor {
	d := make([]T, n)
	for i := range d {
		d[i] = v
	}
	return tensor.From([]int{n}, d)
}
