package ml

import (
	"fmt"

	"github.com/quantserve/quantserve/tensor"
)

// classLabels are a classifier's class labels: int64s or strings.
type classLabels struct {
	ints    []int64
	strings []string
}

func newClassLabels(ints []int64, strs []string) (classLabels, error) {
	switch {
	case len(ints) > 0 && len(strs) > 0:
		return classLabels{}, fmt.Errorf("has both classlabels_int64s and classlabels_strings")
	case len(ints) == 0 && len(strs) == 0:
		return classLabels{}, fmt.Errorf("has no class labels")
	}
	return classLabels{ints, strs}, nil
}

func (l classLabels) n() int { return max(len(l.ints), len(l.strings)) }

// tensor returns the labels at idx as a [N] tensor.
func (l classLabels) tensor(idx []int) *tensor.Tensor {
	if l.strings != nil {
		return tensor.From([]int{len(idx)}, pick(l.strings, idx))
	}
	return tensor.From([]int{len(idx)}, pick(l.ints, idx))
}
