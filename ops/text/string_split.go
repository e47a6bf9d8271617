package text

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "StringSplit", Since: 20, Fold: true}, buildStringSplit)
}

// StringSplitAttrs are StringSplit's attributes.
type StringSplitAttrs struct {
	Delimiter string `onnx:"delimiter"`
	MaxSplit  *int64 `onnx:"maxsplit"`
}

// stringSplit splits each string into substrings: Y holds them, padded
// with "" to the most any string has, and Z how many each string has.
type stringSplit struct {
	delimiter string // "" splits at runs of whitespace
	limit     int    // the most substrings of one string; -1 for no limit
}

func buildStringSplit(n *ops.Node, at *StringSplitAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 2, 2); err != nil {
		return nil, err
	}
	limit := -1
	if at.MaxSplit != nil {
		if *at.MaxSplit < 0 {
			return nil, fmt.Errorf("maxsplit %d is negative", *at.MaxSplit)
		}
		limit = int(min(*at.MaxSplit, 1<<30)) + 1
	}
	return &stringSplit{delimiter: at.Delimiter, limit: limit}, nil
}

// split returns the substrings of s.
func (op *stringSplit) split(s string) []string {
	if op.delimiter != "" {
		return strings.SplitN(s, op.delimiter, op.limit)
	}
	// Runs of whitespace separate; leading and trailing whitespace is
	// dropped; a maxsplit keeps the rest of the string whole (trimmed on
	// its left only).
	var parts []string
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	for rest != "" {
		if op.limit > 0 && len(parts) == op.limit-1 {
			parts = append(parts, strings.TrimRightFunc(rest, unicode.IsSpace))
			break
		}
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:i])
		rest = strings.TrimLeftFunc(rest[i:], unicode.IsSpace)
	}
	return parts
}

func (op *stringSplit) Run(c *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := stringsOf(in[0], "StringSplit")
	if err != nil {
		return nil, err
	}
	parts := make([][]string, len(s))
	width := 0
	total := 0
	for i, v := range s {
		parts[i] = op.split(v)
		width = max(width, len(parts[i]))
		if total += len(parts[i]); total > tensor.MaxElements {
			return nil, ops.InputErrorf("StringSplit makes more than %d substrings", tensor.MaxElements)
		}
	}
	shape := append(slices.Clone(in[0].Shape), width)
	size, err := tensor.NumElements(shape)
	if err != nil {
		return nil, ops.InputErrorf("StringSplit output %s: %v", tensor.ShapeString(shape), err)
	}
	if err := c.ReserveTensor(tensor.String, shape); err != nil {
		return nil, err
	}
	y := make([]string, size)
	z := make([]int64, len(s))
	for i, p := range parts {
		copy(y[i*width:], p)
		z[i] = int64(len(p))
	}
	return []*tensor.Tensor{tensor.From(shape, y), tensor.From(in[0].Shape, z)}, nil
}
