package ml

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func TestArrayFeatureExtractor(t *testing.T) {
	n := node("ArrayFeatureExtractor", 1, 1)
	y := run(t, n, tensor.From([]int{3}, []string{"a", "b", "c"}), tensor.From([]int{2}, []int64{2, 0}))[0]
	if !slices.Equal(y.Shape, []int{1, 2}) || strings.Join(y.Data.([]string), "") != "ca" {
		t.Errorf("ArrayFeatureExtractor of a vector: %v %v", y.Shape, y.Data)
	}
	y = run(t, n, tensor.From([]int{2, 1, 2}, []string{"a", "b", "c", "d"}), tensor.From([]int{3}, []int64{1, 1, 0}))[0]
	if !slices.Equal(y.Shape, []int{2, 1, 3}) || strings.Join(y.Data.([]string), "") != "bbaddc" {
		t.Errorf("ArrayFeatureExtractor of rank 3: %v %v", y.Shape, y.Data)
	}
	for _, idx := range []int64{3, -1} {
		if err := runErr(t, n, tensor.From([]int{3}, []string{"a", "b", "c"}), tensor.From([]int{1}, []int64{idx})); !errors.Is(err, ops.ErrInput) {
			t.Errorf("index %d: %v", idx, err)
		}
	}
}
