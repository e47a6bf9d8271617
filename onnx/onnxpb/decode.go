package onnxpb

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxDepth bounds nesting (graphs inside attributes inside graphs), so a
// crafted file cannot exhaust the stack.
const maxDepth = 64

var errDepth = errors.New("onnxpb: messages nested too deeply")

// UnmarshalModel decodes a serialized onnx.ModelProto.
func UnmarshalModel(b []byte) (*Model, error) {
	m := &Model{}
	err := walk(b, "ModelProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			m.IRVersion = int64(v.u)
		case 2:
			m.ProducerName = string(v.b)
		case 3:
			m.ProducerVersion = string(v.b)
		case 4:
			m.Domain = string(v.b)
		case 5:
			m.ModelVersion = int64(v.u)
		case 6:
			m.DocString = string(v.b)
		case 7:
			g, err := unmarshalGraph(v.b, 1)
			if err != nil {
				return err
			}
			m.Graph = g
		case 8:
			var op OpsetID
			err := walk(v.b, "OperatorSetIdProto", func(num protowire.Number, _ protowire.Type, v field) error {
				switch num {
				case 1:
					op.Domain = string(v.b)
				case 2:
					op.Version = int64(v.u)
				}
				return nil
			})
			if err != nil {
				return err
			}
			m.OpsetImport = append(m.OpsetImport, op)
		case 20:
			m.HasTrainingInfo = true
		case 25:
			m.NumFunctions++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// UnmarshalTensor decodes a serialized onnx.TensorProto (the format of the
// input_N.pb / output_N.pb files in ONNX test data).
func UnmarshalTensor(b []byte) (*Tensor, error) { return unmarshalTensor(b) }

func unmarshalGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	g := &Graph{}
	err := walk(b, "GraphProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			n, err := unmarshalNode(v.b, depth)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		case 2:
			g.Name = string(v.b)
		case 5:
			t, err := unmarshalTensor(v.b)
			if err != nil {
				return err
			}
			g.Initializers = append(g.Initializers, t)
		case 10:
			g.DocString = string(v.b)
		case 11, 12, 13:
			vi, err := unmarshalValueInfo(v.b, depth)
			if err != nil {
				return err
			}
			switch num {
			case 11:
				g.Inputs = append(g.Inputs, vi)
			case 12:
				g.Outputs = append(g.Outputs, vi)
			default:
				g.ValueInfo = append(g.ValueInfo, vi)
			}
		case 15:
			g.NumSparseInit++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func unmarshalNode(b []byte, depth int) (*Node, error) {
	n := &Node{}
	err := walk(b, "NodeProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			n.Inputs = append(n.Inputs, string(v.b))
		case 2:
			n.Outputs = append(n.Outputs, string(v.b))
		case 3:
			n.Name = string(v.b)
		case 4:
			n.OpType = string(v.b)
		case 7:
			n.Domain = string(v.b)
		case 5:
			a, err := unmarshalAttribute(v.b, depth+1)
			if err != nil {
				return err
			}
			n.Attributes = append(n.Attributes, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

func unmarshalAttribute(b []byte, depth int) (*Attribute, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	a := &Attribute{}
	err := walk(b, "AttributeProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			a.Name = string(v.b)
		case 21:
			a.RefAttrName = string(v.b)
		case 20:
			a.Type = AttrType(v.u)
		case 2:
			a.F = math.Float32frombits(uint32(v.u))
		case 3:
			a.I = int64(v.u)
		case 4:
			a.S = v.b
		case 5:
			t, err := unmarshalTensor(v.b)
			if err != nil {
				return err
			}
			a.T = t
		case 6:
			g, err := unmarshalGraph(v.b, depth+1)
			if err != nil {
				return err
			}
			a.G = g
		case 7:
			return appendFixed32s(&a.Floats, typ, v, "AttributeProto.floats")
		case 8:
			return appendVarints(&a.Ints, typ, v, "AttributeProto.ints")
		case 9:
			a.Strings = append(a.Strings, v.b)
		case 10:
			t, err := unmarshalTensor(v.b)
			if err != nil {
				return err
			}
			a.Tensors = append(a.Tensors, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

func unmarshalTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	err := walk(b, "TensorProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			return appendVarints(&t.Dims, typ, v, "TensorProto.dims")
		case 2:
			t.DataType = DataType(int32(v.u))
		case 3:
			t.HasSegment = true
		case 4:
			return appendFixed32s(&t.FloatData, typ, v, "TensorProto.float_data")
		case 5:
			var vals []int64
			if err := appendVarints(&vals, typ, v, "TensorProto.int32_data"); err != nil {
				return err
			}
			for _, x := range vals {
				t.Int32Data = append(t.Int32Data, int32(x))
			}
		case 6:
			t.StringData = append(t.StringData, v.b)
		case 7:
			return appendVarints(&t.Int64Data, typ, v, "TensorProto.int64_data")
		case 8:
			t.Name = string(v.b)
		case 9:
			t.RawData = v.b
			t.HasRawData = true
		case 10:
			return appendFixed64s(&t.DoubleData, typ, v, "TensorProto.double_data")
		case 11:
			var vals []int64
			if err := appendVarints(&vals, typ, v, "TensorProto.uint64_data"); err != nil {
				return err
			}
			for _, x := range vals {
				t.Uint64Data = append(t.Uint64Data, uint64(x))
			}
		case 13:
			t.External = true
		case 14:
			if v.u == 1 {
				t.External = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func unmarshalValueInfo(b []byte, depth int) (*ValueInfo, error) {
	vi := &ValueInfo{}
	err := walk(b, "ValueInfoProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			vi.Name = string(v.b)
		case 2:
			t, err := unmarshalType(v.b, depth+1)
			if err != nil {
				return err
			}
			vi.Type = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return vi, nil
}

func unmarshalType(b []byte, depth int) (*Type, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	t := &Type{}
	err := walk(b, "TypeProto", func(num protowire.Number, typ protowire.Type, v field) error {
		switch num {
		case 1:
			t.Kind = TypeTensor
			return walk(v.b, "TypeProto.Tensor", func(num protowire.Number, typ protowire.Type, v field) error {
				switch num {
				case 1:
					t.ElemType = DataType(int32(v.u))
				case 2:
					t.HasShape = true
					return walk(v.b, "TensorShapeProto", func(num protowire.Number, typ protowire.Type, v field) error {
						if num != 1 {
							return nil
						}
						var d Dim
						err := walk(v.b, "TensorShapeProto.Dimension", func(num protowire.Number, typ protowire.Type, v field) error {
							switch num {
							case 1:
								d.Value, d.HasValue = int64(v.u), true
							case 2:
								d.Param = string(v.b)
							}
							return nil
						})
						t.Shape = append(t.Shape, d)
						return err
					})
				}
				return nil
			})
		case 4:
			t.Kind = TypeSequence
		case 5:
			t.Kind = TypeMap
		case 9:
			t.Kind = TypeOptional
		case 8:
			t.Kind = TypeSparseTensor
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// field is one decoded protobuf field value: u for varint/fixed types, b for
// length-delimited ones.
type field struct {
	u uint64
	b []byte
}

// walk calls fn for every field of the message in b, in order.
func walk(b []byte, msg string, fn func(protowire.Number, protowire.Type, field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("onnxpb: %s: bad field tag: %w", msg, protowire.ParseError(n))
		}
		b = b[n:]
		var v field
		switch typ {
		case protowire.VarintType:
			v.u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, n = protowire.ConsumeFixed32(b)
			v.u = uint64(x)
		case protowire.Fixed64Type:
			v.u, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("onnxpb: %s: field %d: %w", msg, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			continue
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

func appendVarints(dst *[]int64, typ protowire.Type, v field, name string) error {
	switch typ {
	case protowire.VarintType:
		*dst = append(*dst, int64(v.u))
	case protowire.BytesType: // packed
		b := v.b
		for len(b) > 0 {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("onnxpb: %s: %w", name, protowire.ParseError(n))
			}
			*dst = append(*dst, int64(x))
			b = b[n:]
		}
	default:
		return fmt.Errorf("onnxpb: %s: unexpected wire type %d", name, typ)
	}
	return nil
}

func appendFixed32s(dst *[]float32, typ protowire.Type, v field, name string) error {
	switch typ {
	case protowire.Fixed32Type:
		*dst = append(*dst, math.Float32frombits(uint32(v.u)))
	case protowire.BytesType:
		if len(v.b)%4 != 0 {
			return fmt.Errorf("onnxpb: %s: packed length %d is not a multiple of 4", name, len(v.b))
		}
		for i := 0; i < len(v.b); i += 4 {
			x, _ := protowire.ConsumeFixed32(v.b[i:])
			*dst = append(*dst, math.Float32frombits(x))
		}
	default:
		return fmt.Errorf("onnxpb: %s: unexpected wire type %d", name, typ)
	}
	return nil
}

func appendFixed64s(dst *[]float64, typ protowire.Type, v field, name string) error {
	switch typ {
	case protowire.Fixed64Type:
		*dst = append(*dst, math.Float64frombits(v.u))
	case protowire.BytesType:
		if len(v.b)%8 != 0 {
			return fmt.Errorf("onnxpb: %s: packed length %d is not a multiple of 8", name, len(v.b))
		}
		for i := 0; i < len(v.b); i += 8 {
			x, _ := protowire.ConsumeFixed64(v.b[i:])
			*dst = append(*dst, math.Float64frombits(x))
		}
	default:
		return fmt.Errorf("onnxpb: %s: unexpected wire type %d", name, typ)
	}
	return nil
}
