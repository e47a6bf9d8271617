package tensor

// DataType is a tensor element type, named as the Open Inference Protocol
// names it (FP32, INT64, ...).
type DataType uint8

// The element types quantserve stores. Each has one Go slice type in
// Tensor.Data: []bool, []uint8, ..., []F16, []BF16, []string.
const (
	Invalid DataType = iota
	Bool
	Uint8
	Uint16
	Uint32
	Uint64
	Int8
	Int16
	Int32
	Int64
	Float32
	Float64
	Float16
	BFloat16
	String // OIP BYTES: a string per element
)

var dtypeNames = [...]string{
	Invalid:  "INVALID",
	Bool:     "BOOL",
	Uint8:    "UINT8",
	Uint16:   "UINT16",
	Uint32:   "UINT32",
	Uint64:   "UINT64",
	Int8:     "INT8",
	Int16:    "INT16",
	Int32:    "INT32",
	Int64:    "INT64",
	Float32:  "FP32",
	Float64:  "FP64",
	Float16:  "FP16",
	BFloat16: "BF16",
	String:   "BYTES",
}

var elemSizes = [...]int{
	Bool: 1, Uint8: 1, Uint16: 2, Uint32: 4, Uint64: 8,
	Int8: 1, Int16: 2, Int32: 4, Int64: 8, Float32: 4, Float64: 8,
	Float16: 2, BFloat16: 2,
}

// String returns the Open Inference Protocol name of d ("FP32").
func (d DataType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return "INVALID"
}

// Size returns the size in bytes of one element of type d; 0 for BYTES,
// whose elements vary in size.
func (d DataType) Size() int {
	if int(d) < len(elemSizes) {
		return elemSizes[d]
	}
	return 0
}

// IsFloat reports whether d is a floating-point type (FP16, BF16, FP32,
// FP64).
func (d DataType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// IsInteger reports whether d is a signed or unsigned integer type.
func (d DataType) IsInteger() bool { return d >= Uint8 && d <= Int64 }

// IsSigned reports whether d is a signed integer or floating-point type.
func (d DataType) IsSigned() bool { return (d >= Int8 && d <= Int64) || d.IsFloat() }

// ParseDataType returns the DataType for an Open Inference Protocol name.
func ParseDataType(name string) (DataType, bool) {
	for i, n := range dtypeNames {
		if i != 0 && n == name {
			return DataType(i), true
		}
	}
	return Invalid, false
}
