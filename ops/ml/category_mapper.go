package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/ops"
)

func init() {
	ops.Register(ops.Descriptor{Domain: domain, Type: "CategoryMapper", Since: 1, Fold: true}, buildCategoryMapper)
}

// CategoryMapperAttrs are CategoryMapper's attributes.
type CategoryMapperAttrs struct {
	CatsInt64s    []int64  `onnx:"cats_int64s"`
	CatsStrings   []string `onnx:"cats_strings"`
	DefaultInt64  int64    `onnx:"default_int64" default:"-1"`
	DefaultString string   `onnx:"default_string" default:"_Unused"`
}

func buildCategoryMapper(n *ops.Node, a *CategoryMapperAttrs) (ops.Operator, error) {
	if err := arity(n, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if len(a.CatsInt64s) != len(a.CatsStrings) {
		return nil, fmt.Errorf("has %d cats_int64s and %d cats_strings", len(a.CatsInt64s), len(a.CatsStrings))
	}
	ints := a.CatsInt64s
	if ints == nil {
		ints = []int64{}
	}
	return newStringIntMapper("CategoryMapper", a.CatsStrings, ints, a.DefaultInt64, a.DefaultString, true), nil
}
