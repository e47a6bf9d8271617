package text

import (
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

// stringsOf returns t's strings, or an input error naming op when t is
// not a BYTES (string) tensor.
func stringsOf(t *tensor.Tensor, op string) ([]string, error) {
	s, ok := t.Data.([]string)
	if !ok {
		return nil, ops.InputErrorf("%s takes BYTES (strings), got %v", op, t.DType)
	}
	return s, nil
}
