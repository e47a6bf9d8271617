package ops

import (
	"github.com/quantserve/quantserve/tensor"
)

// Result returns t as the only output of an operator, or err.
func Result(t *tensor.Tensor, err error) ([]*tensor.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{t}, nil
}
