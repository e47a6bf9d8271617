package onnxpb

import "strconv"

// Model is onnx.ModelProto.
type Model struct {
	IRVersion       int64
	OpsetImport     []OpsetID
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Graph           *Graph
	HasTrainingInfo bool
	NumFunctions    int
}

// OpsetID is onnx.OperatorSetIdProto. An empty domain is "ai.onnx".
type OpsetID struct {
	Domain  string
	Version int64
}

// Graph is onnx.GraphProto.
type Graph struct {
	Name          string
	Nodes         []*Node
	Initializers  []*Tensor
	NumSparseInit int
	Inputs        []*ValueInfo
	Outputs       []*ValueInfo
	ValueInfo     []*ValueInfo
	DocString     string
}

// Node is onnx.NodeProto.
type Node struct {
	Inputs     []string
	Outputs    []string
	Name       string
	OpType     string
	Domain     string
	Attributes []*Attribute
}

// AttrType is onnx.AttributeProto.AttributeType.
type AttrType int32

// Attribute types.
const (
	AttrUndefined    AttrType = 0
	AttrFloat        AttrType = 1
	AttrInt          AttrType = 2
	AttrString       AttrType = 3
	AttrTensor       AttrType = 4
	AttrGraph        AttrType = 5
	AttrFloats       AttrType = 6
	AttrInts         AttrType = 7
	AttrStrings      AttrType = 8
	AttrTensors      AttrType = 9
	AttrGraphs       AttrType = 10
	AttrSparseTensor AttrType = 11
)

// Attribute is onnx.AttributeProto.
type Attribute struct {
	Name        string
	RefAttrName string
	Type        AttrType
	F           float32
	I           int64
	S           []byte
	T           *Tensor
	G           *Graph
	Floats      []float32
	Ints        []int64
	Strings     [][]byte
	Tensors     []*Tensor
}

// DataType is onnx.TensorProto.DataType.
type DataType int32

// Tensor element types, as numbered in onnx.proto.
const (
	Undefined      DataType = 0
	Float          DataType = 1
	Uint8          DataType = 2
	Int8           DataType = 3
	Uint16         DataType = 4
	Int16          DataType = 5
	Int32          DataType = 6
	Int64          DataType = 7
	String         DataType = 8
	Bool           DataType = 9
	Float16        DataType = 10
	Double         DataType = 11
	Uint32         DataType = 12
	Uint64         DataType = 13
	Complex64      DataType = 14
	Complex128     DataType = 15
	BFloat16       DataType = 16
	Float8E4M3FN   DataType = 17
	Float8E4M3FNUZ DataType = 18
	Float8E5M2     DataType = 19
	Float8E5M2FNUZ DataType = 20
	Uint4          DataType = 21
	Int4           DataType = 22
	Float4E2M1     DataType = 23
	Float8E8M0     DataType = 24
	Uint2          DataType = 25
	Int2           DataType = 26
)

var dataTypeNames = map[DataType]string{
	Undefined: "UNDEFINED", Float: "FLOAT", Uint8: "UINT8", Int8: "INT8", Uint16: "UINT16",
	Int16: "INT16", Int32: "INT32", Int64: "INT64", String: "STRING", Bool: "BOOL",
	Float16: "FLOAT16", Double: "DOUBLE", Uint32: "UINT32", Uint64: "UINT64",
	Complex64: "COMPLEX64", Complex128: "COMPLEX128", BFloat16: "BFLOAT16",
	Float8E4M3FN: "FLOAT8E4M3FN", Float8E4M3FNUZ: "FLOAT8E4M3FNUZ", Float8E5M2: "FLOAT8E5M2",
	Float8E5M2FNUZ: "FLOAT8E5M2FNUZ", Uint4: "UINT4", Int4: "INT4", Float4E2M1: "FLOAT4E2M1",
	Float8E8M0: "FLOAT8E8M0", Uint2: "UINT2", Int2: "INT2",
}

// String returns the onnx.proto name of d ("FLOAT", "INT64", ...).
func (d DataType) String() string {
	if s, ok := dataTypeNames[d]; ok {
		return s
	}
	return "DataType(" + strconv.Itoa(int(d)) + ")"
}

// Tensor is onnx.TensorProto.
type Tensor struct {
	Name       string
	Dims       []int64
	DataType   DataType
	FloatData  []float32
	Int32Data  []int32
	Int64Data  []int64
	DoubleData []float64
	Uint64Data []uint64
	StringData [][]byte
	RawData    []byte
	HasRawData bool
	External   bool // data_location == EXTERNAL or external_data present
	HasSegment bool
}

// ValueInfo is onnx.ValueInfoProto.
type ValueInfo struct {
	Name string
	Type *Type
}

// TypeKind says which member of TypeProto's oneof is set.
type TypeKind int

// Type kinds.
const (
	TypeUnknown TypeKind = iota
	TypeTensor
	TypeSequence
	TypeMap
	TypeOptional
	TypeSparseTensor
)

func (k TypeKind) String() string {
	return [...]string{"unknown", "tensor", "sequence", "map", "optional", "sparse_tensor"}[k]
}

// Type is onnx.TypeProto; only tensor types carry ElemType and Shape.
type Type struct {
	Kind     TypeKind
	ElemType DataType
	HasShape bool
	Shape    []Dim
}

// Dim is onnx.TensorShapeProto.Dimension: a value, a symbolic name, or
// neither (unknown).
type Dim struct {
	Value    int64
	HasValue bool
	Param    string
}
