package onnxpb

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Marshal encodes m as an onnx.ModelProto. Repeated numeric fields are
// written packed; tensors are written with the fields they have set.
func Marshal(m *Model) []byte {
	var b []byte
	b = appendVarintField(b, 1, uint64(m.IRVersion))
	b = appendStringField(b, 2, m.ProducerName)
	b = appendStringField(b, 3, m.ProducerVersion)
	b = appendStringField(b, 4, m.Domain)
	if m.ModelVersion != 0 {
		b = appendVarintField(b, 5, uint64(m.ModelVersion))
	}
	b = appendStringField(b, 6, m.DocString)
	if m.Graph != nil {
		b = appendMessage(b, 7, marshalGraph(m.Graph))
	}
	for _, op := range m.OpsetImport {
		var o []byte
		o = appendStringField(o, 1, op.Domain)
		o = appendVarintField(o, 2, uint64(op.Version))
		b = appendMessage(b, 8, o)
	}
	return b
}

// MarshalTensor encodes t as an onnx.TensorProto.
func MarshalTensor(t *Tensor) []byte {
	var b []byte
	if len(t.Dims) > 0 {
		var p []byte
		for _, d := range t.Dims {
			p = protowire.AppendVarint(p, uint64(d))
		}
		b = appendMessage(b, 1, p)
	}
	b = appendVarintField(b, 2, uint64(t.DataType))
	if len(t.FloatData) > 0 {
		p := make([]byte, 0, 4*len(t.FloatData))
		for _, f := range t.FloatData {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, 4, p)
	}
	if len(t.Int32Data) > 0 {
		var p []byte
		for _, v := range t.Int32Data {
			p = protowire.AppendVarint(p, uint64(int64(v)))
		}
		b = appendMessage(b, 5, p)
	}
	for _, s := range t.StringData {
		b = appendMessage(b, 6, s)
	}
	if len(t.Int64Data) > 0 {
		var p []byte
		for _, v := range t.Int64Data {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = appendMessage(b, 7, p)
	}
	b = appendStringField(b, 8, t.Name)
	if t.HasRawData || len(t.RawData) > 0 {
		b = appendMessage(b, 9, t.RawData)
	}
	if len(t.DoubleData) > 0 {
		p := make([]byte, 0, 8*len(t.DoubleData))
		for _, f := range t.DoubleData {
			p = protowire.AppendFixed64(p, math.Float64bits(f))
		}
		b = appendMessage(b, 10, p)
	}
	if len(t.Uint64Data) > 0 {
		var p []byte
		for _, v := range t.Uint64Data {
			p = protowire.AppendVarint(p, v)
		}
		b = appendMessage(b, 11, p)
	}
	return b
}

func marshalGraph(g *Graph) []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendMessage(b, 1, marshalNode(n))
	}
	b = appendStringField(b, 2, g.Name)
	for _, t := range g.Initializers {
		b = appendMessage(b, 5, MarshalTensor(t))
	}
	b = appendStringField(b, 10, g.DocString)
	for _, vi := range g.Inputs {
		b = appendMessage(b, 11, marshalValueInfo(vi))
	}
	for _, vi := range g.Outputs {
		b = appendMessage(b, 12, marshalValueInfo(vi))
	}
	for _, vi := range g.ValueInfo {
		b = appendMessage(b, 13, marshalValueInfo(vi))
	}
	return b
}

func marshalNode(n *Node) []byte {
	var b []byte
	for _, s := range n.Inputs {
		b = appendMessage(b, 1, []byte(s))
	}
	for _, s := range n.Outputs {
		b = appendMessage(b, 2, []byte(s))
	}
	b = appendStringField(b, 3, n.Name)
	b = appendStringField(b, 4, n.OpType)
	for _, a := range n.Attributes {
		b = appendMessage(b, 5, marshalAttribute(a))
	}
	b = appendStringField(b, 7, n.Domain)
	return b
}

func marshalAttribute(a *Attribute) []byte {
	var b []byte
	b = appendStringField(b, 1, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case AttrString:
		b = appendMessage(b, 4, a.S)
	case AttrTensor:
		b = appendMessage(b, 5, MarshalTensor(a.T))
	case AttrGraph:
		b = appendMessage(b, 6, marshalGraph(a.G))
	case AttrFloats:
		p := make([]byte, 0, 4*len(a.Floats))
		for _, f := range a.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, 7, p)
	case AttrInts:
		var p []byte
		for _, v := range a.Ints {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = appendMessage(b, 8, p)
	case AttrStrings:
		for _, s := range a.Strings {
			b = appendMessage(b, 9, s)
		}
	case AttrTensors:
		for _, t := range a.Tensors {
			b = appendMessage(b, 10, MarshalTensor(t))
		}
	}
	b = appendVarintField(b, 20, uint64(a.Type))
	return b
}

func marshalValueInfo(vi *ValueInfo) []byte {
	var b []byte
	b = appendStringField(b, 1, vi.Name)
	if vi.Type != nil && vi.Type.Kind == TypeTensor {
		var tt []byte
		tt = appendVarintField(tt, 1, uint64(vi.Type.ElemType))
		if vi.Type.HasShape {
			var shape []byte
			for _, d := range vi.Type.Shape {
				var db []byte
				if d.HasValue {
					db = protowire.AppendTag(db, 1, protowire.VarintType)
					db = protowire.AppendVarint(db, uint64(d.Value))
				}
				db = appendStringField(db, 2, d.Param)
				shape = appendMessage(shape, 1, db)
			}
			tt = protowire.AppendTag(tt, 2, protowire.BytesType)
			tt = protowire.AppendBytes(tt, shape)
		}
		b = appendMessage(b, 2, appendMessage(nil, 1, tt))
	}
	return b
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
