package model

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/quantserve/quantserve/tensor"
)

// Operators on BYTES (string) tensors.

func init() {
	register(Descriptor{Type: "StringConcat", Since: 20, Fold: true}, buildStringConcat)
	register(Descriptor{Type: "RegexFullMatch", Since: 20, Fold: true}, buildRegexFullMatch)
	register(Descriptor{Type: "StringSplit", Since: 20, Fold: true}, buildStringSplit)
	register(Descriptor{Type: "StringNormalizer", Since: 10, Fold: true}, buildStringNormalizer)
}

func strings1(t *tensor.Tensor, op string) ([]string, error) {
	s, ok := t.Data.([]string)
	if !ok {
		return nil, inputErrorf("%s takes BYTES (strings), got %v", op, t.DType)
	}
	return s, nil
}

func buildStringConcat(n *node, _ *noAttrs) (opFunc, error) {
	if err := n.checkArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		a, err := strings1(in[0], "StringConcat")
		if err != nil {
			return nil, err
		}
		b, err := strings1(in[1], "StringConcat")
		if err != nil {
			return nil, err
		}
		shape, out, err := binaryMap(a, b, in[0].Shape, in[1].Shape, func(x, y string) string { return x + y })
		if err != nil {
			return nil, err
		}
		return []*tensor.Tensor{tensor.From(shape, out)}, nil
	}, nil
}

// RegexFullMatchAttrs are RegexFullMatch's attributes.
type RegexFullMatchAttrs struct {
	Pattern *string `onnx:"pattern"`
}

// buildRegexFullMatch compiles the pattern once, at load. ONNX specifies
// RE2 syntax, which Go's regexp implements.
func buildRegexFullMatch(n *node, at *RegexFullMatchAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Pattern == nil {
		return nil, fmt.Errorf("needs the pattern attribute")
	}
	re, err := regexp.Compile(`^(?:` + *at.Pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		s, err := strings1(x, "RegexFullMatch")
		if err != nil {
			return nil, err
		}
		out := make([]bool, len(s))
		for i, v := range s {
			out[i] = re.MatchString(v)
		}
		return tensor.From(x.Shape, out), nil
	}), nil
}

// StringSplitAttrs are StringSplit's attributes.
type StringSplitAttrs struct {
	Delimiter string `onnx:"delimiter"`
	MaxSplit  *int64 `onnx:"maxsplit"`
}

func buildStringSplit(n *node, at *StringSplitAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 2, 2); err != nil {
		return nil, err
	}
	limit := -1
	if at.MaxSplit != nil {
		if *at.MaxSplit < 0 {
			return nil, fmt.Errorf("maxsplit %d is negative", *at.MaxSplit)
		}
		limit = int(min(*at.MaxSplit, 1<<30)) + 1
	}
	split := func(s string) []string {
		if at.Delimiter != "" {
			return strings.SplitN(s, at.Delimiter, limit)
		}
		// Runs of whitespace separate; leading and trailing whitespace
		// is dropped; a maxsplit keeps the rest of the string whole
		// (trimmed on its left only).
		var parts []string
		rest := strings.TrimLeftFunc(s, unicode.IsSpace)
		for rest != "" {
			if limit > 0 && len(parts) == limit-1 {
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
	return func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		s, err := strings1(in[0], "StringSplit")
		if err != nil {
			return nil, err
		}
		parts := make([][]string, len(s))
		width := 0
		total := 0
		for i, v := range s {
			parts[i] = split(v)
			width = max(width, len(parts[i]))
			if total += len(parts[i]); total > tensor.MaxElements {
				return nil, inputErrorf("StringSplit makes more than %d substrings", tensor.MaxElements)
			}
		}
		shape := append(slices.Clone(in[0].Shape), width)
		size, err := tensor.NumElements(shape)
		if err != nil {
			return nil, inputErrorf("StringSplit output %s: %v", tensor.ShapeString(shape), err)
		}
		y := make([]string, size)
		z := make([]int64, len(s))
		for i, p := range parts {
			copy(y[i*width:], p)
			z[i] = int64(len(p))
		}
		return []*tensor.Tensor{tensor.From(shape, y), tensor.From(in[0].Shape, z)}, nil
	}, nil
}

// StringNormalizerAttrs are StringNormalizer's attributes.
type StringNormalizerAttrs struct {
	CaseChangeAction string   `onnx:"case_change_action" default:"NONE"`
	CaseSensitive    bool     `onnx:"is_case_sensitive"`
	Locale           string   `onnx:"locale"`
	Stopwords        []string `onnx:"stopwords"`
}

// buildStringNormalizer drops stop words and changes case. Case mapping is
// Unicode's, independent of locale.
func buildStringNormalizer(n *node, at *StringNormalizerAttrs) (opFunc, error) {
	if err := n.checkArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	var change func(string) string
	switch at.CaseChangeAction {
	case "NONE":
		change = func(s string) string { return s }
	case "LOWER":
		change = strings.ToLower
	case "UPPER":
		change = strings.ToUpper
	default:
		return nil, fmt.Errorf("case_change_action %q is not LOWER, UPPER or NONE", at.CaseChangeAction)
	}
	stop := map[string]bool{}
	for _, w := range at.Stopwords {
		if !at.CaseSensitive {
			w = strings.ToLower(w)
		}
		stop[w] = true
	}
	return unary(func(x *tensor.Tensor) (*tensor.Tensor, error) {
		s, err := strings1(x, "StringNormalizer")
		if err != nil {
			return nil, err
		}
		if x.Rank() != 1 && !(x.Rank() == 2 && x.Shape[0] == 1) {
			return nil, inputErrorf("StringNormalizer takes [C] or [1, C], got %s", tensor.ShapeString(x.Shape))
		}
		var out []string
		for _, v := range s {
			key := v
			if !at.CaseSensitive {
				key = strings.ToLower(v)
			}
			if !stop[key] {
				out = append(out, change(v))
			}
		}
		if len(out) == 0 {
			out = []string{""}
		}
		shape := []int{len(out)}
		if x.Rank() == 2 {
			shape = []int{1, len(out)}
		}
		return tensor.From(shape, out), nil
	}), nil
}
