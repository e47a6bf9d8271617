package text

import (
	"fmt"
	"strings"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "StringNormalizer", Since: 10, Fold: true}, buildStringNormalizer)
}

// StringNormalizerAttrs are StringNormalizer's attributes.
type StringNormalizerAttrs struct {
	CaseChangeAction string   `onnx:"case_change_action" default:"NONE"`
	CaseSensitive    bool     `onnx:"is_case_sensitive"`
	Locale           string   `onnx:"locale"`
	Stopwords        []string `onnx:"stopwords"`
}

// stringNormalizer drops stop words and changes case.
type stringNormalizer struct {
	change        func(string) string // the case change
	caseSensitive bool                // stop words match case
	stop          map[string]bool     // the stop words, lower-cased unless caseSensitive
}

// buildStringNormalizer compiles the case change and the stop words. Case
// mapping is Unicode's, independent of locale.
func buildStringNormalizer(n *ops.Node, at *StringNormalizerAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	op := &stringNormalizer{caseSensitive: at.CaseSensitive, stop: map[string]bool{}}
	switch at.CaseChangeAction {
	case "NONE":
		op.change = func(s string) string { return s }
	case "LOWER":
		op.change = strings.ToLower
	case "UPPER":
		op.change = strings.ToUpper
	default:
		return nil, fmt.Errorf("case_change_action %q is not LOWER, UPPER or NONE", at.CaseChangeAction)
	}
	for _, w := range at.Stopwords {
		if !at.CaseSensitive {
			w = strings.ToLower(w)
		}
		op.stop[w] = true
	}
	return op, nil
}

func (op *stringNormalizer) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	s, err := stringsOf(x, "StringNormalizer")
	if err != nil {
		return nil, err
	}
	if x.Rank() != 1 && !(x.Rank() == 2 && x.Shape[0] == 1) {
		return nil, ops.InputErrorf("StringNormalizer takes [C] or [1, C], got %s", tensor.ShapeString(x.Shape))
	}
	var out []string
	for _, v := range s {
		key := v
		if !op.caseSensitive {
			key = strings.ToLower(v)
		}
		if !op.stop[key] {
			out = append(out, op.change(v))
		}
	}
	if len(out) == 0 {
		out = []string{""}
	}
	shape := []int{len(out)}
	if x.Rank() == 2 {
		shape = []int{1, len(out)}
	}
	return []*tensor.Tensor{tensor.From(shape, out)}, nil
}
