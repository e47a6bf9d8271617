package text

import (
	"fmt"
	"regexp"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "RegexFullMatch", Since: 20, Fold: true}, buildRegexFullMatch)
}

// RegexFullMatchAttrs are RegexFullMatch's attributes.
type RegexFullMatchAttrs struct {
	Pattern *string `onnx:"pattern"`
}

// regexFullMatch tells which strings its pattern matches whole.
type regexFullMatch struct {
	re *regexp.Regexp // the pattern, anchored at both ends
}

// buildRegexFullMatch compiles the pattern once, at load. ONNX specifies
// RE2 syntax, which Go's regexp implements.
func buildRegexFullMatch(n *ops.Node, at *RegexFullMatchAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	if at.Pattern == nil {
		return nil, fmt.Errorf("needs the pattern attribute")
	}
	re, err := regexp.Compile(`^(?:` + *at.Pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	return &regexFullMatch{re: re}, nil
}

func (op *regexFullMatch) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	s, err := stringsOf(x, "RegexFullMatch")
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(s))
	for i, v := range s {
		out[i] = op.re.MatchString(v)
	}
	return []*tensor.Tensor{tensor.From(x.Shape, out)}, nil
}
