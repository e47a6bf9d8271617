package oip

import "github.com/quantserve/quantserve/tensor"

// jsonWidth is the most bytes one element of a type takes in JSON, with
// the comma before it: "-1.1754944e-38," for FP32, "-9223372036854775808,"
// for INT64. BYTES elements are measured one by one.
var jsonWidth = [...]int{
	tensor.Bool:     6,
	tensor.Uint8:    4,
	tensor.Uint16:   6,
	tensor.Uint32:   11,
	tensor.Uint64:   21,
	tensor.Int8:     5,
	tensor.Int16:    7,
	tensor.Int32:    12,
	tensor.Int64:    21,
	tensor.Float16:  15, // written as FP32
	tensor.BFloat16: 15,
	tensor.Float32:  15,
	tensor.Float64:  25,
}

// InferResponseBound returns a bound on the bytes of r's answer:
// AppendInferResponse, a newline, and the binary data of the outputs
// marked Binary. The answer is charged before it is encoded, so a small
// request cannot make the server build an answer without bound.
func InferResponseBound(r *InferResponse) int64 {
	n := int64(64) + stringBound(r.ModelName) + stringBound(r.ModelVersion) + stringBound(r.ID)
	for _, o := range r.Outputs {
		n += 128 + stringBound(o.Name) // the object, its datatype and binary_data_size
		t := o.Tensor
		if t == nil {
			continue
		}
		n += 21 * int64(len(t.Shape))
		if o.Binary {
			n += int64(BinarySize(t))
			continue
		}
		if s, ok := t.Data.([]string); ok {
			for _, v := range s {
				n += 1 + stringBound(v)
			}
			continue
		}
		w := 25
		if int(t.DType) < len(jsonWidth) && jsonWidth[t.DType] > 0 {
			w = jsonWidth[t.DType]
		}
		n += int64(t.Len()) * int64(w)
	}
	return n
}

// stringBound is the most bytes appendString writes for s: six per byte
// (\u00XX), and the quotes.
func stringBound(s string) int64 { return 6*int64(len(s)) + 2 }
