package ops

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/quantserve/quantserve/onnx"
	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// An operator's attributes are parsed once, at load, into a struct that
// the builder and the gradient code share. Each field names its ONNX
// attribute in an `onnx` tag and may give a default in a `default` tag:
//
//	type GemmAttrs struct {
//		Alpha  float32 `onnx:"alpha" default:"1"`
//		TransB bool    `onnx:"transB"`
//		Perm   []int64 `onnx:"perm"`  // nil when absent
//		Min    *float32 `onnx:"min"`  // nil when absent
//	}
//
// Field types and the attribute types they take: bool, int, int64 (INT;
// bool is nonzero), float32 (FLOAT), string (STRING), []int64, []int
// (INTS), []float32 (FLOATS), []string (STRINGS), *tensor.Tensor (TENSOR,
// converted), *onnxpb.Graph (GRAPH), []*onnxpb.Graph (GRAPHS), and
// pointers to the scalar types, nil when the attribute is absent. A node
// with an attribute the struct does not name is refused at load as
// unsupported, so a model never runs with semantics quantserve ignores.
// Fields tagged `onnx:"-"` (or untagged) are left for the builder, except
// embedded structs, whose fields count as the outer struct's (operators
// sharing most attributes embed a common struct).

type attrField struct {
	name  string
	index []int // reflect.Value.FieldByIndex path
	kind  reflect.Type
	def   string
	hasD  bool
}

var attrCache sync.Map // reflect.Type -> []attrField

// CheckAttrs validates A's tags (it panics on a field type or default no
// attribute can fill): Register calls it at init.
func CheckAttrs[A any]() { structAttrFieldsOf(reflect.TypeFor[A]()) }

func structAttrFieldsOf(t reflect.Type) []attrField {
	if v, ok := attrCache.Load(t); ok {
		return v.([]attrField)
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("ops: attribute type %v is not a struct", t))
	}
	fs := structAttrFields(t, nil)
	attrCache.Store(t, fs)
	return fs
}

func structAttrFields(t reflect.Type, prefix []int) []attrField {
	var fs []attrField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		name := f.Tag.Get("onnx")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			fs = append(fs, structAttrFields(f.Type, index)...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		if !supportedAttrType(f.Type) {
			panic(fmt.Sprintf("ops: %v.%s: attribute fields cannot be %v", t, f.Name, f.Type))
		}
		def, hasD := f.Tag.Lookup("default")
		af := attrField{name: name, index: index, kind: f.Type, def: def, hasD: hasD}
		if hasD {
			if err := setDefault(reflect.New(f.Type).Elem(), af); err != nil {
				panic(fmt.Sprintf("ops: %v.%s: default %q: %v", t, f.Name, def, err))
			}
		}
		fs = append(fs, af)
	}
	return fs
}

var (
	tensorPtr = reflect.TypeFor[*tensor.Tensor]()
	graphPtr  = reflect.TypeFor[*onnxpb.Graph]()
	graphs    = reflect.TypeFor[[]*onnxpb.Graph]()
)

func supportedAttrType(t reflect.Type) bool {
	switch t {
	case tensorPtr, graphPtr, graphs:
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float32, reflect.String:
		return true
	case reflect.Pointer:
		switch t.Elem().Kind() {
		case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float32, reflect.String:
			return true
		}
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int, reflect.Int64, reflect.Float32, reflect.String:
			return true
		}
	}
	return false
}

// ParseAttrs fills dst (a pointer to an attribute struct) from a node's
// attributes by name.
func ParseAttrs(attrs map[string]*onnxpb.Attribute, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	fields := structAttrFieldsOf(v.Type())
	for name := range attrs {
		known := false
		for _, f := range fields {
			if f.name == name {
				known = true
				break
			}
		}
		if !known {
			return onnx.Unsupportedf("attribute %q", name)
		}
	}
	for _, f := range fields {
		fv := v.FieldByIndex(f.index)
		a, ok := attrs[f.name]
		if !ok {
			if f.hasD {
				if err := setDefault(fv, f); err != nil {
					return err
				}
			}
			continue
		}
		if err := setAttr(fv, f, a); err != nil {
			return fmt.Errorf("attribute %q: %w", f.name, err)
		}
	}
	return nil
}

// wantType is the ONNX attribute type a field takes.
func wantType(t reflect.Type) onnxpb.AttrType {
	switch t {
	case tensorPtr:
		return onnxpb.AttrTensor
	case graphPtr:
		return onnxpb.AttrGraph
	case graphs:
		return onnxpb.AttrGraphs
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64:
		return onnxpb.AttrInt
	case reflect.Float32:
		return onnxpb.AttrFloat
	case reflect.String:
		return onnxpb.AttrString
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int, reflect.Int64:
			return onnxpb.AttrInts
		case reflect.Float32:
			return onnxpb.AttrFloats
		case reflect.String:
			return onnxpb.AttrStrings
		}
	}
	return onnxpb.AttrUndefined
}

func setAttr(fv reflect.Value, f attrField, a *onnxpb.Attribute) error {
	want := wantType(f.kind)
	if a.Type != want && a.Type != onnxpb.AttrUndefined {
		return fmt.Errorf("has type %s, want %s", attrTypeName(a.Type), attrTypeName(want))
	}
	if fv.Kind() == reflect.Pointer && f.kind != tensorPtr && f.kind != graphPtr {
		p := reflect.New(f.kind.Elem())
		if err := setScalar(p.Elem(), a); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	switch f.kind {
	case tensorPtr:
		if a.T == nil {
			return fmt.Errorf("has no tensor")
		}
		t, err := onnx.TensorFromONNX(a.T)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(t))
		return nil
	case graphPtr:
		if a.G == nil {
			return fmt.Errorf("has no graph")
		}
		fv.Set(reflect.ValueOf(a.G))
		return nil
	case graphs:
		return onnx.Unsupportedf("GRAPHS attributes")
	}
	if fv.Kind() == reflect.Slice {
		switch fv.Type().Elem().Kind() {
		case reflect.Int64:
			fv.Set(reflect.ValueOf(append([]int64{}, a.Ints...)))
		case reflect.Int:
			s := make([]int, len(a.Ints))
			for i, x := range a.Ints {
				if x != int64(int(x)) {
					return fmt.Errorf("value %d out of range", x)
				}
				s[i] = int(x)
			}
			fv.Set(reflect.ValueOf(s))
		case reflect.Float32:
			fv.Set(reflect.ValueOf(append([]float32{}, a.Floats...)))
		case reflect.String:
			s := make([]string, len(a.Strings))
			for i, b := range a.Strings {
				s[i] = string(b)
			}
			fv.Set(reflect.ValueOf(s))
		}
		return nil
	}
	return setScalar(fv, a)
}

func setScalar(fv reflect.Value, a *onnxpb.Attribute) error {
	switch fv.Kind() {
	case reflect.Bool:
		fv.SetBool(a.I != 0)
	case reflect.Int, reflect.Int64:
		if fv.Kind() == reflect.Int && a.I != int64(int(a.I)) {
			return fmt.Errorf("value %d out of range", a.I)
		}
		fv.SetInt(a.I)
	case reflect.Float32:
		fv.SetFloat(float64(a.F))
	case reflect.String:
		fv.SetString(string(a.S))
	}
	return nil
}

func setDefault(fv reflect.Value, f attrField) error {
	if fv.Kind() == reflect.Pointer {
		p := reflect.New(fv.Type().Elem())
		if err := setDefault(p.Elem(), attrField{kind: fv.Type().Elem(), def: f.def}); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	switch fv.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(f.def)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(f.def, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(i)
	case reflect.Float32:
		x, err := strconv.ParseFloat(f.def, 32)
		if err != nil {
			return err
		}
		fv.SetFloat(x)
	case reflect.String:
		fv.SetString(f.def)
	case reflect.Slice:
		parts := []string{}
		if f.def != "" {
			parts = strings.Split(f.def, ",")
		}
		s := reflect.MakeSlice(fv.Type(), len(parts), len(parts))
		for i, p := range parts {
			if err := setDefault(s.Index(i), attrField{kind: fv.Type().Elem(), def: strings.TrimSpace(p)}); err != nil {
				return err
			}
		}
		fv.Set(s)
	default:
		return fmt.Errorf("no default for %v", fv.Type())
	}
	return nil
}

func attrTypeName(t onnxpb.AttrType) string {
	names := map[onnxpb.AttrType]string{
		onnxpb.AttrFloat: "FLOAT", onnxpb.AttrInt: "INT", onnxpb.AttrString: "STRING",
		onnxpb.AttrTensor: "TENSOR", onnxpb.AttrGraph: "GRAPH", onnxpb.AttrFloats: "FLOATS",
		onnxpb.AttrInts: "INTS", onnxpb.AttrStrings: "STRINGS", onnxpb.AttrTensors: "TENSORS",
		onnxpb.AttrGraphs: "GRAPHS", onnxpb.AttrSparseTensor: "SPARSE_TENSOR",
	}
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("type %d", t)
}
