package oip

import (
	"fmt"
	"math"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/quantserve/quantserve/oip/grpcpb"
	"github.com/quantserve/quantserve/tensor"
)

// A ModelInferRequest's protobuf encoding says how much decoding it will
// allocate before anything is decoded: a 2-byte empty entry of inputs
// becomes a message of a hundred bytes and a pointer, a packed field split
// into one-element runs is copied into a new array at every run (quadratic
// in the runs), a 5-byte shape entry is 8 bytes of a slice. The walk below
// reads the encoding as proto.Unmarshal does (protobuf-go's field by field
// rules: a known field of an unexpected wire type is an unknown field,
// packed and unpacked forms of a repeated scalar both accepted, unknown
// fields kept as bytes) and adds up what each field makes it allocate, so
// a server charges a message to its memory budget, or refuses it, first.

// GRPCInferSize is what a ModelInferRequest's encoding holds, counted
// from the wire without decoding it.
type GRPCInferSize struct {
	Inputs   int   // entries of inputs
	Outputs  int   // entries of outputs
	Raw      int   // entries of raw_input_contents
	Elements int64 // elements of typed contents, over every input
	// Bytes is at most what proto.Unmarshal allocates to decode the
	// message, arrays grown and dropped on the way included.
	Bytes int64
}

// MeasureGRPCInferRequest walks b, a ModelInferRequest's protobuf
// encoding, and returns what decoding it takes, allocating nothing for
// its size. It refuses what the protocol's limits refuse before a decoder
// would allocate for it: an input whose shape has more than MaxRank
// dimensions, a typed contents field of more than tensor.MaxElements
// elements, and encodings proto.Unmarshal cannot parse. It stops counting
// once Bytes passes limit (the message will be refused for its size
// anyway), with the counts up to there. Every error it returns is an
// *Error.
func MeasureGRPCInferRequest(b []byte, limit int64) (GRPCInferSize, error) {
	w := wireWalk{limit: limit}
	w.alloc(sizeRequest)
	err := w.request(b)
	return w.size, err
}

// UnmarshalGRPCInferRequest decodes b, a ModelInferRequest's protobuf
// encoding (measured first with MeasureGRPCInferRequest); a message that
// does not decode is an *Error.
func UnmarshalGRPCInferRequest(b []byte) (*grpcpb.ModelInferRequest, error) {
	m := new(grpcpb.ModelInferRequest)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, semantic("the message is not a ModelInferRequest: %v", err)
	}
	return m, nil
}

// The Go sizes decoding allocates: messages, and what a slice of each
// kind of element takes per element.
var (
	sizeRequest   = int64(reflect.TypeFor[grpcpb.ModelInferRequest]().Size())
	sizeInput     = int64(reflect.TypeFor[grpcpb.ModelInferRequest_InferInputTensor]().Size())
	sizeOutput    = int64(reflect.TypeFor[grpcpb.ModelInferRequest_InferRequestedOutputTensor]().Size())
	sizeContents  = int64(reflect.TypeFor[grpcpb.InferTensorContents]().Size())
	sizeParameter = int64(reflect.TypeFor[grpcpb.InferParameter]().Size())
	sizePointer   = int64(reflect.TypeFor[*grpcpb.InferParameter]().Size())
	sizeBytes     = int64(reflect.TypeFor[[]byte]().Size())
)

const (
	// oneofSize is the wrapper a oneof member of InferParameter is
	// allocated in.
	oneofSize = 16
	// mapEntrySize is a parameters entry's share of its map: the slot (a
	// string key and a pointer) at the map's load factor, the arrays
	// dropped as the map grows, and the boxing of reflect's insertion.
	mapEntrySize = 96
	// mapSize is a new parameters map.
	mapSize = 256
)

// contentsFields are InferTensorContents' repeated fields, by number: the
// name, the size of one element in Go, and the wire type of an element
// sent unpacked (bytes_contents, never packed, is BytesType).
var contentsFields = [...]struct {
	name string
	size int64
	wire protowire.Type
}{
	1: {"bool_contents", 1, protowire.VarintType},
	2: {"int_contents", 4, protowire.VarintType},
	3: {"int64_contents", 8, protowire.VarintType},
	4: {"uint_contents", 4, protowire.VarintType},
	5: {"uint64_contents", 8, protowire.VarintType},
	6: {"fp32_contents", 4, protowire.Fixed32Type},
	7: {"fp64_contents", 8, protowire.Fixed64Type},
	8: {"bytes_contents", sizeBytes, protowire.BytesType},
}

// wireWalk adds up what decoding a ModelInferRequest allocates.
type wireWalk struct {
	size  GRPCInferSize
	limit int64
}

// alloc counts an allocation of n bytes, rounded up as the Go allocator
// rounds (size classes, at most an eighth more).
func (w *wireWalk) alloc(n int64) {
	if n > 0 {
		w.size.Bytes = min(w.size.Bytes+n+n/8+16, math.MaxInt64/2)
	}
}

func (w *wireWalk) over() bool { return w.size.Bytes > w.limit }

// array follows one slice of one message as decoding grows it.
type array struct{ len, cap int64 }

// append adds n elements of size bytes as Go's append does: a new array
// when they do not fit, of the capacity the runtime chooses.
func (a *array) append(w *wireWalk, n, size int64) {
	if a.len+n > a.cap {
		a.cap = nextCap(a.len+n, a.cap)
		w.alloc(a.cap * size)
	}
	a.len += n
}

// grow adds a packed run of n elements as protobuf-go does: a new array
// of exactly the elements so far and the run's, whatever the capacity.
func (a *array) grow(w *wireWalk, n, size int64) {
	if n > 0 {
		a.len += n
		a.cap = a.len
		w.alloc(a.cap * size)
	}
}

// nextCap is the capacity append gives a slice of capacity old that must
// hold n elements (the runtime's nextslicecap).
func nextCap(n, old int64) int64 {
	if n > 2*old {
		return n
	}
	const threshold = 256
	if old < threshold {
		return 2 * old
	}
	c := old
	for c < n {
		c += (c + 3*threshold) >> 2
	}
	return c
}

// wireField is one field of an encoded message.
type wireField struct {
	num   protowire.Number
	typ   protowire.Type
	value []byte // the whole value of any other type
	bytes []byte // the contents of a BytesType value
}

// next reads the field b starts with and returns the rest; ok is false
// for a malformed field.
func next(b []byte) (f wireField, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num > protowire.MaxValidNumber {
		return f, nil, false
	}
	b = b[n:]
	m := protowire.ConsumeFieldValue(num, typ, b)
	if m < 0 {
		return f, nil, false
	}
	f = wireField{num: num, typ: typ, value: b[:m]}
	if typ == protowire.BytesType {
		f.bytes, _ = protowire.ConsumeBytes(b)
	}
	return f, b[m:], true
}

// unknown counts an unknown field kept in its message's unknown bytes
// (the tag written again, then the value).
func (w *wireWalk) unknown(u *array, f wireField) {
	u.append(w, int64(protowire.SizeTag(f.num)), 1)
	u.append(w, int64(len(f.value)), 1)
}

func malformed(where string) error {
	return semantic("the message is not a ModelInferRequest: malformed protobuf in %s", where)
}

func (w *wireWalk) request(b []byte) error {
	var inputs, outputs, raw, unknown array
	var params bool
	for len(b) > 0 && !w.over() {
		f, rest, ok := next(b)
		if !ok {
			return malformed("the request")
		}
		b = rest
		if f.typ != protowire.BytesType || f.num > 7 {
			w.unknown(&unknown, f)
			continue
		}
		switch f.num {
		case 1, 2, 3: // model_name, model_version, id
			w.alloc(int64(len(f.bytes)))
		case 4:
			if err := w.parameter(f.bytes, &params, "", -1); err != nil {
				return err
			}
		case 5:
			inputs.append(w, 1, sizePointer)
			if err := w.input(f.bytes, w.size.Inputs); err != nil {
				return err
			}
			w.size.Inputs++
		case 6:
			outputs.append(w, 1, sizePointer)
			if err := w.output(f.bytes, w.size.Outputs); err != nil {
				return err
			}
			w.size.Outputs++
		case 7:
			raw.append(w, 1, sizeBytes)
			w.alloc(int64(len(f.bytes)))
			w.size.Raw++
		}
	}
	return nil
}

func (w *wireWalk) input(b []byte, i int) error {
	w.alloc(sizeInput)
	var shape, unknown array
	var params, contents bool
	var fields [len(contentsFields)]array
	var name []byte
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return malformed(fmt.Sprintf("inputs[%d]", i))
		}
		b = rest
		switch {
		case f.num <= 2 && f.typ == protowire.BytesType: // name, datatype
			w.alloc(int64(len(f.bytes)))
			if f.num == 1 {
				name = f.bytes
			}
		case f.num == 3 && f.typ == protowire.VarintType:
			shape.append(w, 1, 8)
		case f.num == 3 && f.typ == protowire.BytesType:
			shape.grow(w, varints(f.bytes), 8)
		case f.num == 4 && f.typ == protowire.BytesType:
			if err := w.parameter(f.bytes, &params, "inputs", i); err != nil {
				return err
			}
		case f.num == 5 && f.typ == protowire.BytesType:
			if !contents { // later occurrences merge into the first
				contents = true
				w.alloc(sizeContents)
			}
			if err := w.contents(f.bytes, &fields, i); err != nil {
				return err
			}
		default:
			w.unknown(&unknown, f)
		}
	}
	if shape.len > MaxRank {
		return semantic("%s: shape has rank %d, at most %d is supported", label(i, string(name)), shape.len, MaxRank)
	}
	for k, a := range fields {
		if a.len > tensor.MaxElements {
			return semantic("%s: contents.%s has %d elements, more than %d", label(i, string(name)), contentsFields[k].name, a.len, int64(tensor.MaxElements))
		}
		w.size.Elements += a.len
	}
	return nil
}

// varints counts the varints of a packed run as protobuf-go does (the
// bytes that end one).
func varints(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

func (w *wireWalk) contents(b []byte, fields *[len(contentsFields)]array, i int) error {
	var unknown array
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return malformed(fmt.Sprintf("inputs[%d].contents", i))
		}
		b = rest
		if f.num < 1 || int(f.num) >= len(contentsFields) {
			w.unknown(&unknown, f)
			continue
		}
		spec, a := contentsFields[f.num], &fields[f.num]
		switch {
		case f.typ == spec.wire && spec.wire == protowire.BytesType: // one bytes_contents element
			a.append(w, 1, spec.size)
			w.alloc(int64(len(f.bytes)))
		case f.typ == spec.wire: // one element sent unpacked
			a.append(w, 1, spec.size)
		case f.typ == protowire.BytesType: // a packed run
			switch spec.wire {
			case protowire.VarintType:
				a.grow(w, varints(f.bytes), spec.size)
			case protowire.Fixed32Type:
				a.grow(w, int64(len(f.bytes)/4), spec.size)
			case protowire.Fixed64Type:
				a.grow(w, int64(len(f.bytes)/8), spec.size)
			}
		default:
			w.unknown(&unknown, f)
		}
	}
	return nil
}

func (w *wireWalk) output(b []byte, i int) error {
	w.alloc(sizeOutput)
	var unknown array
	var params bool
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return malformed(fmt.Sprintf("outputs[%d]", i))
		}
		b = rest
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			w.alloc(int64(len(f.bytes)))
		case f.num == 2 && f.typ == protowire.BytesType:
			if err := w.parameter(f.bytes, &params, "outputs", i); err != nil {
				return err
			}
		default:
			w.unknown(&unknown, f)
		}
	}
	return nil
}

// parameter counts one entry of a parameters map (made at the first
// entry): its key, and its value, an InferParameter allocated whether or
// not the entry holds one. The map is the request's, or that of
// owner[i] (inputs or outputs).
func (w *wireWalk) parameter(b []byte, made *bool, owner string, i int) error {
	where := func() string {
		if owner == "" {
			return "parameters"
		}
		return fmt.Sprintf("%s[%d].parameters", owner, i)
	}
	if !*made {
		*made = true
		w.alloc(mapSize)
	}
	w.alloc(mapEntrySize + sizeParameter)
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return malformed(where())
		}
		b = rest
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			w.alloc(int64(len(f.bytes)))
		case f.num == 2 && f.typ == protowire.BytesType:
			if err := w.parameterValue(f.bytes, where); err != nil {
				return err
			}
		} // anything else in an entry is dropped
	}
	return nil
}

// parameterValue counts an InferParameter: each member of its oneof
// allocates a wrapper (a string its bytes too).
func (w *wireWalk) parameterValue(b []byte, where func() string) error {
	var unknown array
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return malformed(where())
		}
		b = rest
		switch {
		case (f.num == 1 || f.num == 2 || f.num == 5) && f.typ == protowire.VarintType, f.num == 4 && f.typ == protowire.Fixed64Type:
			w.alloc(oneofSize)
		case f.num == 3 && f.typ == protowire.BytesType:
			w.alloc(oneofSize + int64(len(f.bytes)))
		default:
			w.unknown(&unknown, f)
		}
	}
	return nil
}
