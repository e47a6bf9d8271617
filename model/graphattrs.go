package model

import (
	"reflect"

	"github.com/quantserve/quantserve/onnx/onnxpb"
)

var (
	graphType  = reflect.TypeFor[*onnxpb.Graph]()
	graphsType = reflect.TypeFor[[]*onnxpb.Graph]()
)

// dropGraphs clears the graph attributes (If's branches, Loop's and
// Scan's bodies) of params, a parsed attribute struct, once the node's
// builder has compiled them into its operator: as decoded they share the
// file's bytes, which a compiled model does not keep.
func dropGraphs(params any) {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	dropGraphFields(v.Elem())
}

func dropGraphFields(s reflect.Value) {
	for i := range s.NumField() {
		f := s.Field(i)
		switch {
		case !f.CanSet():
		case f.Type() == graphType || f.Type() == graphsType:
			f.SetZero()
		case f.Kind() == reflect.Struct:
			dropGraphFields(f)
		}
	}
}
